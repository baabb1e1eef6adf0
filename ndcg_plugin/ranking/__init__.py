"""A run ranked as trec_eval ranks it: the qrels index (``qrels_index``) and the ranked run
(``ranked``), on columns. Below the measure families, which reduce a ranked run to values."""
