# One test per file of model/ (the property tests apart): each links the model
# and, through comet_add_test, util; nothing it does not use.
comet_add_test(test_model SOURCES model/test_model.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_coll SOURCES model/test_coll.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_search SOURCES model/test_search.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_hw SOURCES model/test_hw.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_ops SOURCES model/test_ops.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_files SOURCES model/test_files.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_dist SOURCES model/test_dist.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_model_validate SOURCES model/test_validate.c LIBS comet_model comet_results
               LABELS model sanitize)
comet_add_test(test_validate_pairs SOURCES model/test_validate_pairs.c LIBS comet_model
               LABELS model sanitize)
comet_add_test(test_params SOURCES model/test_params.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_inputs SOURCES model/test_inputs.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_props SOURCES model/test_props.c LIBS comet_model LABELS model)
comet_add_test(test_gms_model SOURCES model/test_gms_model.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_record_method SOURCES model/test_record_method.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_hw_units SOURCES model/test_hw_units.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_unfused_io SOURCES model/test_unfused_io.c LIBS comet_model LABELS model sanitize)
comet_add_test(test_onchip SOURCES model/test_onchip.c LIBS comet_model LABELS model sanitize)
