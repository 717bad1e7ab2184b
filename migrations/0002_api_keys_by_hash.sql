-- Keys are looked up by their hash alone (the prefix is then only compared), so that a request with an
-- unknown prefix costs exactly what a known prefix with a wrong secret costs: no timing oracle on prefixes.
CREATE UNIQUE INDEX api_keys_by_hash ON api_keys (key_hash);
