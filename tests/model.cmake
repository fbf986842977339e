comet_add_test(test_model SOURCES model/test_model.c LIBS comet_model comet_calibrate comet_bench comet_util
               LABELS model sanitize)
comet_add_test(test_validate_pairs SOURCES model/test_validate_pairs.c LIBS comet_model comet_util
               LABELS model sanitize)
comet_add_test(test_params SOURCES model/test_params.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_inputs SOURCES model/test_inputs.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_props SOURCES model/test_props.c LIBS comet_model LABELS model)
comet_add_test(test_gms_model SOURCES model/test_gms_model.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_record_method SOURCES model/test_record_method.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_hw_units SOURCES model/test_hw_units.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_unfused_io SOURCES model/test_unfused_io.c LIBS comet_model LABELS model sanitize)
