-- lhcnp schema 10: queue_utilisation's utilisation_percent is at most 100.
--
-- A queue cannot send faster than its port, but the lab's switches
-- published as the queue's counters/bytes (and packets) the node's count of
-- data packets enqueued, not the bytes transmitted that the leaves
-- describe: while a queue grows, more arrives than its port sends, and
-- queue_utilisation read up to 178 % in the lab (issue 28). The switches
-- now publish the bytes and packets sent from the queue (server/dataplane,
-- netsim's per-priority transmit counters). What remains for data stored
-- before, another implementation's counters, or samples whose timestamps
-- stray from the instants of their values (a publication is stamped after
-- its snapshot) is capped here. bits_per_second and
-- bits_per_simulated_second stay as computed (measurements, not shares).
-- docs/collector.md ("Rates and time base").

CREATE OR REPLACE VIEW queue_utilisation AS
SELECT c.ts,
       c.target,
       c.keys ->> 'name' AS interface,
       lhcnp_queue_id(c.keys) AS queue,
       (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
       lhcnp_int(rate.value_num) AS port_rate_bps,
       LEAST(100, (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(rate.value_num, 0))::double precision) AS utilisation_percent,
       sp.speed,
       (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision AS bits_per_simulated_second
FROM counter_increases c
LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
CROSS JOIN LATERAL lhcnp_speed_of(c.target, c.ts) sp
WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
  AND c.increase IS NOT NULL;

COMMENT ON COLUMN queue_utilisation.utilisation_percent IS
    'bits_per_simulated_second / port_rate_bps, percent, at most 100';

---- create above / drop below ----

COMMENT ON COLUMN queue_utilisation.utilisation_percent IS 'bits_per_simulated_second / port_rate_bps, percent';

CREATE OR REPLACE VIEW queue_utilisation AS
SELECT c.ts,
       c.target,
       c.keys ->> 'name' AS interface,
       lhcnp_queue_id(c.keys) AS queue,
       (c.increase * 8 / NULLIF(c.seconds, 0)::numeric)::double precision AS bits_per_second,
       lhcnp_int(rate.value_num) AS port_rate_bps,
       (c.increase * 800 / NULLIF(c.seconds * sp.speed, 0)::numeric / NULLIF(rate.value_num, 0))::double precision AS utilisation_percent,
       sp.speed,
       (c.increase * 8 / NULLIF(c.seconds * sp.speed, 0)::numeric)::double precision AS bits_per_simulated_second
FROM counter_increases c
LEFT JOIN LATERAL lhcnp_leaf_at(c.target, jsonb_build_object('name', c.keys ->> 'name'),
                                '/lhcnp/interfaces/interface/state/effective-port-rate', c.ts) rate ON true
CROSS JOIN LATERAL lhcnp_speed_of(c.target, c.ts) sp
WHERE c.schema_path = '/lhcnp/interfaces/interface/queues/queue/state/counters/bytes'
  AND c.increase IS NOT NULL;
