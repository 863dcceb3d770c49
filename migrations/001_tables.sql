-- lhcnp schema 1: the collector's tables. docs/collector.md ("Schema")
-- describes every column; the collector writes them, an NMS and the tuner
-- read them (through the views of later migrations where there is one).

-- Switches to subscribe to. An NMS adds one with one INSERT; the collector
-- hears it through NOTIFY lhcnp_targets and re-reads the table periodically.
CREATE TABLE targets (
    name          text PRIMARY KEY CHECK (name <> ''),
    address       text NOT NULL CHECK (address <> ''),
    insecure      boolean NOT NULL DEFAULT false,
    skip_verify   boolean NOT NULL DEFAULT false,
    ca_file       text,
    cert_file     text,
    key_file      text,
    username      text,
    password      text,
    -- The same list as the collector YAML's `subscriptions` of a target.
    subscriptions jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(subscriptions) = 'array'),
    enabled       boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION lhcnp_targets_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        NEW.updated_at := now();
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('lhcnp_targets', OLD.name);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.name IS DISTINCT FROM OLD.name) THEN
        PERFORM pg_notify('lhcnp_targets', NEW.name);
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER targets_changed
    BEFORE INSERT OR UPDATE OR DELETE ON targets
    FOR EACH ROW EXECUTE FUNCTION lhcnp_targets_changed();

-- One row per (target, leaf path). id is computed by the collector: a 63-bit
-- hash of target and canonical path, so every collector agrees on it without
-- asking the database.
CREATE TABLE series (
    id          bigint PRIMARY KEY CHECK (id >= 0),
    target      text NOT NULL,
    path        text NOT NULL,
    schema_path text NOT NULL,
    keys        jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(keys) = 'object'),
    yang_type   text,
    unit        text,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (target, path)
);
CREATE INDEX series_schema_path ON series (schema_path, target);

-- Every value received, one typed column set per row. Partitioned by the
-- switch's timestamp (migration 2 creates and drops the partitions). No
-- unique index: the ingest ledger makes batches exactly-once, and a per-row
-- unique index would cut COPY speed 3-4x.
CREATE TABLE samples (
    ts        timestamptz NOT NULL,
    series_id bigint NOT NULL,
    v_int     bigint,
    v_float   double precision,
    v_num     numeric,
    v_bool    boolean,
    v_text    text,
    -- bit 0: initial sync (before sync_response); bit 1: delete;
    -- bit 2: counter reset (the counter went backwards).
    flags     smallint NOT NULL DEFAULT 0,
    batch_id  bigint NOT NULL
) PARTITION BY RANGE (ts);
CREATE INDEX samples_series_ts ON samples (series_id, ts);

-- The last value of every series, upserted by the collector per batch.
CREATE TABLE latest (
    series_id bigint PRIMARY KEY,
    ts        timestamptz NOT NULL,
    v_int     bigint,
    v_float   double precision,
    v_num     numeric,
    v_bool    boolean,
    v_text    text,
    flags     smallint NOT NULL DEFAULT 0
);

-- One row per committed batch, written in the batch's transaction: a batch
-- replayed after a crash or reconnect finds its id here and is skipped.
-- epoch is the fencing epoch of the collector's lease on the target.
CREATE TABLE ingest_ledger (
    batch_id     bigint PRIMARY KEY,
    collector    text NOT NULL,
    target       text NOT NULL,
    epoch        bigint NOT NULL,
    rows         integer NOT NULL CHECK (rows >= 0),
    first_ts     timestamptz,
    last_ts      timestamptz,
    committed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_ledger_target ON ingest_ledger (target, committed_at);

-- Rows PostgreSQL refused (a permanent error), with the error; the rest of
-- their batch is stored.
CREATE TABLE dead_letters (
    id          bigserial PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now(),
    target      text,
    batch_id    bigint,
    "row"       jsonb,
    error       text NOT NULL
);

-- What the switches did: every Long-haul CNP reported through last-cnp
-- (kind 'cnp'), flows learned and aged, and other discrete events.
CREATE TABLE events (
    ts                  timestamptz NOT NULL,
    target              text NOT NULL,
    kind                text NOT NULL,
    interface           text,
    queue               integer,
    action              text,
    parameter           integer,
    congestion_level    integer,
    source_address      text,
    destination_address text,
    source_qp           bigint,
    destination_qp      bigint,
    details             jsonb,
    batch_id            bigint
);
CREATE INDEX events_target_ts ON events (target, ts);
CREATE INDEX events_kind_ts ON events (kind, ts);

-- Scale-out: one lease per target; epoch grows at every change of owner and
-- is stored in every ledger row (fencing).
CREATE TABLE leases (
    target     text PRIMARY KEY,
    owner      text NOT NULL,
    epoch      bigint NOT NULL DEFAULT 1,
    expires_at timestamptz NOT NULL
);

CREATE TABLE collectors (
    id           text PRIMARY KEY,
    address      text,
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Every decision of the tuner, pushed or not.
CREATE TABLE tuner_actions (
    id        bigserial PRIMARY KEY,
    ts        timestamptz NOT NULL DEFAULT now(),
    target    text NOT NULL,
    interface text,
    queue     integer,
    inputs    jsonb,
    reason    text,
    before    jsonb,
    after     jsonb,
    outcome   text NOT NULL CHECK (outcome IN ('dry-run', 'pushed', 'confirmed', 'rolled-back', 'refused', 'error')),
    dry_run   boolean NOT NULL DEFAULT false,
    error     text
);
CREATE INDEX tuner_actions_target_ts ON tuner_actions (target, ts);

---- create above / drop below ----

DROP TABLE tuner_actions;
DROP TABLE collectors;
DROP TABLE leases;
DROP TABLE events;
DROP TABLE dead_letters;
DROP TABLE ingest_ledger;
DROP TABLE latest;
DROP TABLE samples;
DROP TABLE series;
DROP TABLE targets;
DROP FUNCTION lhcnp_targets_changed();
