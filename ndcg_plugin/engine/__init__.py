"""The engine: a block of whole queries evaluated (``block``), a run file streamed block by
block (``stream``), and qrels streamed beside a run grouped in the same order (``side_by_side``)."""
