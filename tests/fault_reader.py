"""A file whose reads fail when ``hit()`` says so: the file layer under the reader, for the fault
injection harnesses of tests/test_faults.py (each loads it by path, in its own process)."""


class Reader:
    def __init__(self, f, hit):
        self._f, self._hit = f, hit

    def read(self, *a):
        self._hit()
        return self._f.read(*a)

    def readinto(self, b):
        self._hit()
        return self._f.readinto(b)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self._f.close()

    def __iter__(self):
        return iter(self._f)
