# Started as 'python3 -I -c <this file>' in a fresh sandbox: reads the job (the runner's source included)
# from stdin and runs the runner, so the command line holds no secrets.
import json
import sys

job = json.load(sys.stdin)
exec(compile(job.pop("runner"), "<trialrun-runner>", "exec"), {"job": job, "__name__": "trialrun_runner"})
