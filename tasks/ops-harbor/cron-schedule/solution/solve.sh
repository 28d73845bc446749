#!/bin/bash
cat > crontab.txt <<'CRON'
# m h dom mon dow command
30 2 * * * /usr/local/bin/backup.sh >> /var/log/cron-jobs.log 2>&1
0 9 * * 1-5 /usr/local/bin/report.sh >> /var/log/cron-jobs.log 2>&1
CRON
