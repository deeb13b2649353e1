#!/bin/sh
# Run once by the postgres image on an empty data directory (mounted into
# /docker-entrypoint-initdb.d by compose.yaml), as the superuser:
# - the role mnemo logs in as: not a superuser, but allowed to create roles,
#   since mnemo's first migration creates the mnemo_app role that its pooled
#   connections SET ROLE to (row-level security holds that role);
# - mnemo's database, owned by that role (so it may create the tables);
# - the vector extension in it, which only a superuser may create.
set -eu
role=${POSTGRES_MNEMO_USER:-mnemo}
database=${POSTGRES_MNEMO_DB:-mnemo}
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "${POSTGRES_DB:-$POSTGRES_USER}" \
  -v role="$role" -v database="$database" -v password="$POSTGRES_MNEMO_PASSWORD" <<'SQL'
CREATE ROLE :"role" LOGIN CREATEROLE PASSWORD :'password';
CREATE DATABASE :"database" OWNER :"role";
\connect :"database"
CREATE EXTENSION IF NOT EXISTS vector;
SQL
