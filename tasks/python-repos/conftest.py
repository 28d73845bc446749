# The task trees hold test files of their own (run in sandboxes, with the bug in place): the repository's pytest
# run collects only test_python_repos.py here, which runs them in temporary copies.
collect_ignore_glob = ["*/workspace/*", "*/hidden/*", "*/solution/*"]
