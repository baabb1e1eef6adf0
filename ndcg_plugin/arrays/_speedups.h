/* What the two files of the _speedups extension share (see _speedups.c): buffer helpers, and the
   functions _speedups_rows.c defines for the module's method table. */
#ifndef NDCG_PLUGIN_SPEEDUPS_H
#define NDCG_PLUGIN_SPEEDUPS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* little-endian load of the n <= 8 bytes at p, zeros above them; `end`: the end of the buffer.
   One 8-byte load, masked, where 8 bytes lie before the end (a memcpy of a constant size is one
   instruction; of a variable size, a call); byte by byte near the end. */
static inline uint64_t load_le(const uint8_t *p, int64_t n, const uint8_t *end) {
    uint64_t v = 0;
    if (end - p >= 8) {
        memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        return n >= 8 ? v : v & ((UINT64_C(1) << (8 * n)) - 1);
    }
    for (int64_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline int64_t offset_at(const void *off, int width, int64_t i) {
    return width == 8 ? ((const int64_t *)off)[i] : (int64_t)((const int32_t *)off)[i];
}

/* Where string i of Arrow offsets lies in data of data_len bytes: its start and length; 0 when the
   offsets put it outside the data (every loop checks this before it reads a string). */
static inline int span_of(const void *off, int width, int64_t i, int64_t data_len, int64_t *start, int64_t *len) {
    int64_t s = offset_at(off, width, i), e = offset_at(off, width, i + 1);
    if (s < 0 || e < s || e > data_len) return 0;
    *start = s;
    *len = e - s;
    return 1;
}

/* The contract of every entry point (see speedups.py): its result, or None to decline (the
   caller then runs numpy); never an exception to decline. Arguments that disagree (a width that
   is not 4 or 8, buffers whose sizes do not match, an offset, row or code outside its buffer)
   are declined. Sizes are Py_ssize_t or int64_t, and a size is compared by division, never by a
   product that could overflow (holds). */
static inline PyObject *declined(void) { return Py_NewRef(Py_None); }

static inline int check_width(int width) { return width == 4 || width == 8; }

/* Whether a buffer of len bytes holds exactly n items of size bytes (size > 0). */
static inline int holds(Py_ssize_t len, Py_ssize_t size, int64_t n) {
    return size > 0 && n >= 0 && len % size == 0 && len / size == n;
}

/* _speedups_rows.c: the loops over a block's rows (codes, keys, labels, scores) */
PyObject *ndcg_distinct_small(PyObject *self, PyObject *args);
PyObject *ndcg_find_in_ranges(PyObject *self, PyObject *args);
PyObject *ndcg_find_pairs(PyObject *self, PyObject *args);
PyObject *ndcg_ideal_dcg(PyObject *self, PyObject *args);
PyObject *ndcg_split_sums(PyObject *self, PyObject *args);
PyObject *ndcg_tied_rows(PyObject *self, PyObject *args);
PyObject *ndcg_sort_ties(PyObject *self, PyObject *args);

/* _speedups_ranks.c: the loops over a ranked run (its top rows, their order and ranks, the DCG)
   and the sort of a qrels index's keys */
PyObject *ndcg_ranked_top(PyObject *self, PyObject *args);
PyObject *ndcg_dcg(PyObject *self, PyObject *args);
PyObject *ndcg_ranked_rows(PyObject *self, PyObject *args);
PyObject *ndcg_sort_runs(PyObject *self, PyObject *args);

#endif
