# Owned by the checkpoint work; defines bertology_checkpoint and its tests.
