comet_add_test(test_system SOURCES system/test_system.c LIBS comet_system comet_model
               LABELS system model TIMEOUT 600)
comet_add_test(test_published SOURCES system/test_published.c LIBS comet_system comet_model
               LABELS system model TIMEOUT 600)
# A calibrated CPU profile as the chips: fitted link, measured vector costs.
comet_add_test(test_system_profile SOURCES system/test_system_profile.c LIBS comet_system comet_model
               LABELS system)
target_link_libraries(test_system_profile PRIVATE m)
# comet beside DFModel's released runs (docs/validation/dfmodel-runs.csv): Fig. 19's ranking,
# Table VI's chain.
comet_add_test(test_dfmodel_runs SOURCES system/test_dfmodel_runs.c LIBS comet_system comet_model
               LABELS system model TIMEOUT 600)
# The pipeline's transfers on the critical path: 1F1B over full-duplex links and the
# forward-only schedule, closed forms against a simulation of the schedules.
comet_add_test(test_pipeline SOURCES system/test_pipeline.c LIBS comet_system comet_model
               LABELS system model)
