"""trec_eval's side: ``crosscheck`` (``check``), and the ``ndcg-plugin trec_eval`` drop-in
(``command``: its command line; ``report``: its output byte for byte; ``interp``: 10.0's
interpolated precision)."""
