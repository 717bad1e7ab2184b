/** `npm run admin -- <command> [options]`: the admin CLI (admin-commands.ts) on this process's arguments and streams. */
import { runAdmin } from "./admin-commands";

runAdmin(process.argv.slice(2)).then((code) => process.exit(code));
