# Owned by the model work; defines bertology_model and its tests.
