# Runs in a bare sandbox holding the reference solution and the pristine tests (calibration.ts): lists
# candidate edits with the image's repair tool, applies them one by one, and keeps those a plain pytest run
# of the tests rejects. Plain pytest, not the verifier, decides that a mutant is bad: a mutant the verifier
# then passes is a false positive of the verifier's own making.
import json, subprocess, sys
job = json.load(sys.stdin)
tool, module, want = "/opt/trialrun/trialrun_repair.py", job["module"], job["count"]
def call(*args, timeout=30):
    return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True, timeout=timeout)
listing = call("list", module)
edits = json.loads(listing.stdout).get("edits", []) if listing.returncode == 0 else []
# A spread over the file rather than its first lines; deterministic, so calibrations are comparable.
order = sorted(range(len(edits)), key=lambda i: (i * 7919) % max(1, len(edits)))
found, surviving, tried = [], 0, 0
for i in order:
    if len(found) >= want or tried >= want * 5:
        break
    edit = edits[i]
    if call("apply", module, str(edit["id"])).returncode != 0:
        continue
    tried += 1
    source = open(module, encoding="utf-8").read()
    try:
        verdict = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *job["tests"]], capture_output=True, timeout=15).returncode
    except subprocess.TimeoutExpired:
        verdict = "timeout"
    call("revert", module)
    if verdict in (1, "timeout"):
        found.append({"name": "%s@%d" % (edit["kind"], edit["line"]), "source": source})
    elif verdict == 0:
        surviving += 1
print(json.dumps({"found": found, "surviving": surviving, "listed": len(edits)}))
