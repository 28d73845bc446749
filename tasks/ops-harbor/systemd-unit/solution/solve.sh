#!/bin/bash
cat > worker.service <<'UNIT'
[Unit]
Description=Background job worker
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/opt/worker/bin/worker --queue jobs
User=worker
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=multi-user.target
UNIT
