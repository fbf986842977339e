comet_add_test(test_reports SOURCES reports/test_reports.c LIBS comet_reports comet_bench LABELS reports sanitize)
# The report renders in headless Chromium: every figure decoded, none wider
# than the page, a 1280 px screenshot (skipped, exit 77, without Chromium).
add_test(NAME report_browser
  COMMAND ${CMAKE_SOURCE_DIR}/tests/reports/browser_check.sh $<TARGET_FILE:comet>
          ${CMAKE_SOURCE_DIR}/tests/fixtures/report)
set_tests_properties(report_browser PROPERTIES LABELS "reports;long" SKIP_RETURN_CODE 77 TIMEOUT 300)
comet_add_test(test_compare SOURCES reports/test_compare.c LIBS comet_reports LABELS reports sanitize)
# validate --system across links: each whole-step record over its own link's fits
comet_add_test(test_sysval_links SOURCES reports/test_sysval_links.c
               LIBS comet_reports comet_results comet_model PkgConfig::JANSSON LABELS reports system)
target_link_libraries(test_sysval_links PRIVATE m)
