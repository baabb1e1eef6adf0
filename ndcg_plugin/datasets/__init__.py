"""ir-datasets collections: loading a dataset's qrels and official measures by id (``load``),
and seeding the ir-datasets cache with local files for offline use (``seed``)."""
