#!/bin/bash
cat > service.json <<'JSON'
{
  "name": "billing-api",
  "port": 8080,
  "workers": 4,
  "log_level": "info",
  "upstreams": ["db-1:5432", "db-2:5432"]
}
JSON
