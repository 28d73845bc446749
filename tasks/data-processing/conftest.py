# The task trees hold scripts and data of their own (run in sandboxes and temporary copies): the repository's
# pytest run collects only test_data_processing.py here.
collect_ignore_glob = ["*/workspace/*", "*/hidden/*", "*/solution/*"]
