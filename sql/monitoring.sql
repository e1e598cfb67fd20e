-- Monitoring queries for outbox-relay's replication slot. Any role can run
-- them (pg_replication_slots and pg_current_wal_lsn() are readable by
-- PUBLIC). `outbox-relay status` and the outbox_relay_slot_* metrics run the
-- same query; these are for psql and dashboards.

-- Slot position, lag and WAL retention, one row per slot.
--   lag:        WAL written since the relay's last confirmed position
--   retained:   WAL the server keeps for the slot (from restart_lsn)
--   wal_status: reserved | extended (within limits), unreserved (past
--               max_slot_wal_keep_size: at risk at the next checkpoint),
--               lost (invalidated: create the slot again)
--   safe_wal_size: WAL that can still be written before the slot becomes
--               unreserved; NULL when max_slot_wal_keep_size = -1
SELECT slot_name,
       plugin,
       database,
       active,
       active_pid,
       confirmed_flush_lsn,
       restart_lsn,
       pg_current_wal_lsn()                                              AS current_wal_lsn,
       pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)) AS lag,
       pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn))         AS retained,
       wal_status,
       pg_size_pretty(safe_wal_size)                                     AS safe_wal_size
FROM pg_replication_slots
WHERE slot_type = 'logical'
ORDER BY slot_name;

-- The same in bytes, for alerting (e.g. alert when retained_bytes exceeds a
-- share of the disk, or when an outbox slot is inactive for minutes).
SELECT slot_name,
       active,
       pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS lag_bytes,
       pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint         AS retained_bytes,
       wal_status,
       safe_wal_size
FROM pg_replication_slots
WHERE slot_type = 'logical';

-- The server's retention settings: max_slot_wal_keep_size caps what a
-- stopped relay can pin (-1: unlimited, the default).
SELECT name, setting, unit
FROM pg_settings
WHERE name IN ('max_slot_wal_keep_size', 'wal_keep_size', 'max_wal_size',
               'wal_level', 'max_replication_slots', 'max_wal_senders',
               'wal_sender_timeout');

-- Is the relay connected? Its walsender, with the positions it reported.
SELECT pid, application_name, client_addr, state, backend_start,
       sent_lsn, write_lsn, flush_lsn, replay_lsn,
       pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)) AS flush_lag
FROM pg_stat_replication
WHERE application_name = 'outbox-relay';

-- Total disk used by WAL (needs pg_monitor or superuser for pg_ls_waldir).
-- SELECT pg_size_pretty(sum(size)) AS pg_wal_size FROM pg_ls_waldir();
