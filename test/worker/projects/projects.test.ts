import { describeCases } from "../cases";

describeCases(import.meta.glob("./*.cases.ts"));
