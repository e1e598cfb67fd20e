# PostgreSQL 15 for the compose demo: Debian 12's own postgresql-15 and
# postgresql-15-wal2json, the packages scripts/pg.sh runs in the tests. The
# entrypoint allows wal2json in output_plugin_libraries only when the
# installed minor release has that setting (15.19 on).
# It stays on Debian 12 while the relay image moved to Debian 13 (issue
# 33): the suite's wal2json tests run this PostgreSQL 15 (Debian 13 has 17
# only), and a new major would not start on the data volume an existing
# compose setup made with 15 (that needs pg_upgrade). The relay in either
# image relays from it (container_test).
FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      postgresql-15 postgresql-15-wal2json \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /docker-sql \
 && chown -R postgres:postgres /var/lib/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY sql/outbox.sql sql/roles.sql sql/examples.sql sql/monitoring.sql /docker-sql/
COPY docker/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
USER postgres
EXPOSE 5432
VOLUME /var/lib/postgresql/data
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
