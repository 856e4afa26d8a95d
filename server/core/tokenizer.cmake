# Owned by the tokenizer work; defines bertology_tokenizer and its tests.
