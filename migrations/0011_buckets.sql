-- Buckets (docs/SHARDING.md §2): every organization is in one of 1,024, which every id minted for its rows carries
-- (src/db/buckets.ts). An expand: today's code, which names no bucket, keeps working against it. Every organization
-- made before this has only ids without a bucket, so 0 is exact for each of them; new ones are placed at random.
ALTER TABLE organizations ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0 CHECK (bucket BETWEEN 0 AND 1023);

-- Moving a bucket between databases (docs/SHARDING.md §5) finds its organizations by it.
CREATE INDEX organizations_by_bucket ON organizations (bucket);
