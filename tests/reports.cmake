comet_add_test(test_reports SOURCES reports/test_reports.c LIBS comet_reports LABELS reports sanitize)
