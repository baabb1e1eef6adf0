/* Optional C loops for the hottest numpy passes over a block's rows (see speedups.py).

Each function computes exactly what its numpy definition in the package computes (tests compare
the two on random inputs); the Python side falls back to numpy when this module is not built.
Arguments are raw buffers (numpy arrays, Arrow buffers): offsets of Arrow strings (int32 or
int64, absolute positions in the data buffer), the data bytes, and output arrays the caller
allocated. Every offset and row is checked against its buffer before it is read; the loops run
without the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const uint64_t K1 = 0x9E3779B97F4A7C15ULL, K2 = 0xC2B2AE3D27D4EB4FULL, K3 = 0x165667B19E3779F9ULL;

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

static int check_width(int width) {
    if (width != 4 && width != 8) {
        PyErr_Format(PyExc_ValueError, "offset width must be 4 or 8 bytes, got %d", width);
        return 0;
    }
    return 1;
}

/* fingerprints(offsets, width, data, out): out[i] = the fingerprint of string i
   (columns.fingerprints: first 8 bytes, last 8 bytes beyond 8, length). */
static PyObject *fingerprints(PyObject *self, PyObject *args) {
    Py_buffer off, data, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*w*", &off, &width, &data, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = out.len / 8, bad = -1;
    if (!check_width(width)) goto done;
    if (off.len < (n + 1) * width) {
        PyErr_SetString(PyExc_ValueError, "fewer offsets than strings + 1");
        goto done;
    }
    const uint8_t *d = data.buf;
    uint64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t s = offset_at(off.buf, width, i), e = offset_at(off.buf, width, i + 1);
        if (s < 0 || e < s || e > data.len) { bad = i; break; }
        int64_t len = e - s;
        uint64_t m = load_le(d + s, len < 8 ? len : 8, d + data.len) * K1 ^ (uint64_t)len * K2;
        if (len > 8) {
            uint64_t t = load_le(d + e - 8, 8, d + data.len);
            m ^= ((t * K2) >> 29) ^ (t * K3);
        }
        o[i] = m;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "string %lld lies outside the data", (long long)bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
    return result;
}

/* heads(offsets, width, data, rows, head, length): of string rows[i] (rows: int64; an empty
   buffer for every string), its first 8 bytes as a big-endian word (zeros after its end) and
   its length (columns.heads). */
static PyObject *heads(PyObject *self, PyObject *args) {
    Py_buffer off, data, rows, head, length;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*w*w*", &off, &width, &data, &rows, &head, &length)) return NULL;
    PyObject *result = NULL;
    int64_t n = head.len / 8, strings = off.len / (width > 0 ? width : 1) - 1, bad = -1;
    int all = rows.len == 0;
    if (!check_width(width)) goto done;
    if (length.len != head.len || (all ? n > strings : rows.len != n * 8)) {
        PyErr_SetString(PyExc_ValueError, "heads: buffer sizes disagree");
        goto done;
    }
    const uint8_t *d = data.buf;
    const int64_t *r = rows.buf;
    uint64_t *h = head.buf;
    int64_t *l = length.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t at = all ? i : r[i];
        if (at < 0 || at >= strings) { bad = i; break; }
        int64_t s = offset_at(off.buf, width, at), e = offset_at(off.buf, width, at + 1);
        if (s < 0 || e < s || e > data.len) { bad = i; break; }
        int64_t len = e - s;
        h[i] = __builtin_bswap64(load_le(d + s, len < 8 ? len : 8, d + data.len));
        l[i] = len;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "row %lld names no string in the data", (long long)bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&rows);
    PyBuffer_Release(&head); PyBuffer_Release(&length);
    return result;
}

/* distinct_small(fp, codes, width, most): duplicates.distinct_within_small_queries: True when
   the codes (int32 or int64) count queries from 0 in runs (each query one run, the next code
   one more) of at most `most` rows, and no run holds a fingerprint twice; else False. */
static PyObject *distinct_small(PyObject *self, PyObject *args) {
    Py_buffer fp, codes;
    int width, most;
    if (!PyArg_ParseTuple(args, "y*y*ii", &fp, &codes, &width, &most)) return NULL;
    PyObject *result = NULL;
    int64_t n = fp.len / 8;
    if (!check_width(width)) goto done;
    if (codes.len != n * width || most < 1 || most > 4096) {
        PyErr_SetString(PyExc_ValueError, "distinct_small: buffer sizes disagree");
        goto done;
    }
    const uint64_t *f = fp.buf;
    int distinct = n >= 2 && offset_at(codes.buf, width, 0) == 0;
    uint64_t *seen = distinct ? PyMem_RawMalloc(sizeof(uint64_t) * (size_t)most) : NULL;
    if (distinct && seen == NULL) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    int64_t a = 0;
    while (distinct && a < n) {
        int64_t q = offset_at(codes.buf, width, a), b = a + 1;
        while (b < n && offset_at(codes.buf, width, b) == q) b++;
        if ((b < n && offset_at(codes.buf, width, b) != q + 1) || b - a > most) { distinct = 0; break; }
        int64_t k = b - a;
        if (k <= 24) {  /* every pair compared, without branches: cheaper than a sort of so few */
            int same = 0;
            for (int64_t i = 1; i < k; i++)
                for (int64_t j = 0; j < i; j++) same |= f[a + i] == f[a + j];
            distinct = !same;
        } else {
            for (int64_t i = 0; i < k; i++) {  /* insertion into the sorted fingerprints seen */
                uint64_t v = f[a + i];
                int64_t j = i;
                while (j > 0 && seen[j - 1] > v) { seen[j] = seen[j - 1]; j--; }
                if (j > 0 && seen[j - 1] == v) { distinct = 0; break; }
                seen[j] = v;
            }
        }
        a = b;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(seen);
    result = PyBool_FromLong(distinct);
done:
    PyBuffer_Release(&fp); PyBuffer_Release(&codes);
    return result;
}

/* find_in_ranges(keys, starts, codes, width, needles, out): out[i] = the position of needles[i]
   in keys[starts[c]:starts[c + 1]] (c = codes[i]; sorted, distinct uint64 keys), or -1. */
static PyObject *find_in_ranges(PyObject *self, PyObject *args) {
    Py_buffer keys, starts, codes, needles, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*y*y*iy*w*", &keys, &starts, &codes, &width, &needles, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = needles.len / 8, nk = keys.len / 8, ns = starts.len / 8 - 1, bad = -1;
    if (!check_width(width)) goto done;
    if (out.len != n * 8 || codes.len != n * width || ns < 0) {
        PyErr_SetString(PyExc_ValueError, "find_in_ranges: buffer sizes disagree");
        goto done;
    }
    const uint64_t *k = keys.buf, *x = needles.buf;
    const int64_t *st = starts.buf;
    int64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t c = offset_at(codes.buf, width, i);
        if (c < 0 || c >= ns) { bad = i; break; }
        int64_t lo = st[c], end = st[c + 1], hi = end;
        if (lo < 0 || end < lo || end > nk) { bad = i; break; }
        uint64_t v = x[i];
        while (hi - lo > 8) {  /* the first key >= v lies in [lo, hi] */
            int64_t mid = lo + (hi - lo) / 2;
            if (k[mid] < v) lo = mid + 1; else hi = mid;
        }
        int64_t below = 0;  /* the first key >= v: lo + the keys below v in [lo, hi) */
        for (int64_t j = lo; j < hi; j++) below += k[j] < v;
        o[i] = lo + below < end && k[lo + below] == v ? lo + below : -1;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "needle %lld has no range of keys", (long long)bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&starts); PyBuffer_Release(&codes);
    PyBuffer_Release(&needles); PyBuffer_Release(&out);
    return result;
}

/* empty_field(data, start, end, delimiter, first_column, has_cr): columnar._empty_field on the
   bytes data[start:end]: a delimiter followed by a delimiter, "\n" or (has_cr) "\r", or ending
   the bytes; with first_column, also one that starts them or follows "\n". */
static PyObject *empty_field(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t start, end;
    int delimiter, first_column, has_cr;
    if (!PyArg_ParseTuple(args, "y*nniii", &data, &start, &end, &delimiter, &first_column, &has_cr)) return NULL;
    if (start < 0 || end < start || end > data.len) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "empty_field: the span lies outside the data");
        return NULL;
    }
    const uint8_t *c = (const uint8_t *)data.buf + start;
    Py_ssize_t n = end - start;
    const uint8_t d = (uint8_t)delimiter, cr = has_cr ? '\r' : d;  /* without \r, test d twice */
    int found = n > 0 && (c[n - 1] == d || (first_column && c[0] == d));
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; !found && i + 1 < n; i += 4096) {
        Py_ssize_t stop = i + 4096 < n - 1 ? i + 4096 : n - 1;
        int hit = 0;
        for (Py_ssize_t j = i; j < stop; j++) {
            uint8_t a = c[j], b = c[j + 1];
            hit |= (a == d) & ((b == d) | (b == '\n') | (b == cr));
            hit |= first_column & (a == '\n') & (b == d);
        }
        found = hit;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyBool_FromLong(found);
}

/* increasing_codes(offsets, width, data, previous, code, out): the group codes of strings that
   never decrease (byte order, a prefix first): out[i] (int32 or int64, by its size) counts the
   distinct strings before string i, from `code` for the first string when it equals
   `previous` (bytes, or None for no string before), from code + 1 otherwise. Returns the last
   code given, or None at the first string smaller than the one before it. */
static PyObject *increasing_codes(PyObject *self, PyObject *args) {
    Py_buffer off, data, prev, out;
    int width;
    long long code;
    PyObject *previous;
    if (!PyArg_ParseTuple(args, "y*iy*OLw*", &off, &width, &data, &previous, &code, &out)) return NULL;
    PyObject *result = NULL;
    int have_prev = previous != Py_None;
    if (have_prev && PyObject_GetBuffer(previous, &prev, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
        return NULL;
    }
    int64_t n = (int64_t)(off.len / (width == 8 ? 8 : 4)) - 1, bad = -1, item = 0;
    int decreasing = 0;
    if (!check_width(width)) goto done;
    item = n > 0 ? out.len / n : 0;
    if (n < 0 || (n > 0 && out.len != n * item) || (n > 0 && item != 4 && item != 8)) {
        PyErr_SetString(PyExc_ValueError, "increasing_codes: buffer sizes disagree");
        goto done;
    }
    const uint8_t *d = data.buf, *last = have_prev ? prev.buf : NULL;
    const uint8_t *last_end = have_prev ? (const uint8_t *)prev.buf + prev.len : NULL;
    int64_t last_len = have_prev ? prev.len : 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t s = offset_at(off.buf, width, i), e = offset_at(off.buf, width, i + 1);
        if (s < 0 || e < s || e > data.len) { bad = i; break; }
        int64_t len = e - s;
        if (last == NULL) {
            code++;
        } else {  /* the first 8 bytes as big-endian words first: a prefix of 8 bytes or fewer is
                     the word of the longer string, and then the shorter one */
            uint64_t a = __builtin_bswap64(load_le(d + s, len < 8 ? len : 8, d + data.len));
            uint64_t b = __builtin_bswap64(load_le(last, last_len < 8 ? last_len : 8, last_end));
            int c = (a > b) - (a < b);
            if (c == 0 && len > 8 && last_len > 8) {
                int64_t m = (len < last_len ? len : last_len) - 8;
                c = m ? memcmp(d + s + 8, last + 8, (size_t)m) : 0;
            }
            if (c == 0) c = (len > last_len) - (len < last_len);
            if (c < 0) { decreasing = 1; break; }
            code += c > 0;
        }
        if (item == 4) ((int32_t *)out.buf)[i] = (int32_t)code; else ((int64_t *)out.buf)[i] = code;
        last = d + s;
        last_end = d + data.len;
        last_len = len;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "string %lld lies outside the data", (long long)bad);
        goto done;
    }
    result = decreasing ? Py_NewRef(Py_None) : PyLong_FromLongLong(code);
done:
    if (have_prev) PyBuffer_Release(&prev);
    PyBuffer_Release(&off); PyBuffer_Release(&data); PyBuffer_Release(&out);
    return result;
}

/* ideal_dcg(codes, labels, cutoff, gain, discount, out): ndcg.ideal_by_label and the IDCG sum
   over it: for each run of equal codes (int64, never decreasing), its labels > 0 sorted
   descending, the first `cutoff` (all for -1) added in that order, out[code] += gain[label] /
   discount[rank] (gain indexed by label, discount by rank: numpy's own doubles). False, with
   nothing written, when the codes decrease somewhere or a code or a label is out of range. */
static int desc_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

static PyObject *ideal_dcg(PyObject *self, PyObject *args) {
    Py_buffer codes, labels, gain, disc, out;
    long long cutoff;
    if (!PyArg_ParseTuple(args, "y*y*Ly*y*w*", &codes, &labels, &cutoff, &gain, &disc, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = codes.len / 8, nq = out.len / 8, ng = gain.len / 8, nd = disc.len / 8, longest = 0;
    const int64_t *q = codes.buf, *l = labels.buf;
    const double *g = gain.buf, *dc = disc.buf;
    double *o = out.buf;
    int ok = labels.len == codes.len;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; ok && a < n; a = b) {  /* check every code and label first, and size the scratch */
        for (b = a; b < n && q[b] == q[a]; b++)
            if (l[b] >= ng) ok = 0;
        if (q[a] < 0 || q[a] >= nq || (b < n && q[b] < q[a])) ok = 0;
        if (b - a > longest) longest = b - a;
    }
    Py_END_ALLOW_THREADS
    int64_t depth = cutoff < 0 || cutoff > longest ? longest : cutoff;
    if (!ok || depth > nd) { result = Py_NewRef(Py_False); goto done; }
    int64_t *scratch = PyMem_RawMalloc(sizeof(int64_t) * (size_t)(longest > 0 ? longest : 1));
    if (scratch == NULL) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; a < n; a = b) {
        int64_t k = 0;
        for (b = a; b < n && q[b] == q[a]; b++)
            if (l[b] > 0) scratch[k++] = l[b];
        if (k <= 32) {
            for (int64_t i = 1; i < k; i++) {  /* insertion sort, descending */
                int64_t v = scratch[i], j = i;
                while (j > 0 && scratch[j - 1] < v) { scratch[j] = scratch[j - 1]; j--; }
                scratch[j] = v;
            }
        } else {
            qsort(scratch, (size_t)k, sizeof(int64_t), desc_int64);
        }
        int64_t top = cutoff < 0 || cutoff > k ? k : cutoff;
        double sum = o[q[a]];
        for (int64_t r = 0; r < top; r++) sum += g[scratch[r]] / dc[r];
        o[q[a]] = sum;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&codes); PyBuffer_Release(&labels); PyBuffer_Release(&gain);
    PyBuffer_Release(&disc); PyBuffer_Release(&out);
    return result;
}

/* equal_at(offsets_a, width_a, data_a, rows_a, offsets_b, width_b, data_b, rows_b, out): out[i]
   (uint8) = string rows_a[i] of a equals string rows_b[i] of b, byte for byte. */
static PyObject *equal_at(PyObject *self, PyObject *args) {
    Py_buffer oa, da, ra, ob, db, rb, out;
    int wa, wb;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*iy*y*w*", &oa, &wa, &da, &ra, &ob, &wb, &db, &rb, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = out.len, bad = -1;
    if (!check_width(wa) || !check_width(wb)) goto done;
    int64_t sa = oa.len / wa - 1, sb = ob.len / wb - 1;
    if (ra.len != n * 8 || rb.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "equal_at: buffer sizes disagree");
        goto done;
    }
    const int64_t *x = ra.buf, *y = rb.buf;
    const uint8_t *pa = da.buf, *pb = db.buf;
    uint8_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= sa || y[i] < 0 || y[i] >= sb) { bad = i; break; }
        int64_t s1 = offset_at(oa.buf, wa, x[i]), e1 = offset_at(oa.buf, wa, x[i] + 1);
        int64_t s2 = offset_at(ob.buf, wb, y[i]), e2 = offset_at(ob.buf, wb, y[i] + 1);
        if (s1 < 0 || e1 < s1 || e1 > da.len || s2 < 0 || e2 < s2 || e2 > db.len) { bad = i; break; }
        o[i] = e1 - s1 == e2 - s2 && (e1 == s1 || memcmp(pa + s1, pb + s2, (size_t)(e1 - s1)) == 0);
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "pair %lld names no string in the data", (long long)bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&oa); PyBuffer_Release(&da); PyBuffer_Release(&ra);
    PyBuffer_Release(&ob); PyBuffer_Release(&db); PyBuffer_Release(&rb); PyBuffer_Release(&out);
    return result;
}

/* split_sums(values): exact.split_sums: [(E, sum of hi, sum of mid, sum of lo, count)] for each
   E among the values (float64, finite: else ValueError), E increasing, summed in int64 (each
   piece is below 2^18 in magnitude: exact for up to 2^35 values, which the caller ensures). */
static PyObject *split_sums(PyObject *self, PyObject *args) {
    Py_buffer values;
    if (!PyArg_ParseTuple(args, "y*", &values)) return NULL;
    int64_t n = values.len / 8;
    int64_t (*sums)[4] = PyMem_RawCalloc(2047, sizeof *sums);
    if (sums == NULL) { PyBuffer_Release(&values); return PyErr_NoMemory(); }
    const double *v = values.buf;
    int finite = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t bits;
        memcpy(&bits, &v[i], 8);
        int64_t biased = (bits >> 52) & 0x7FF, fraction = bits & ((INT64_C(1) << 52) - 1);
        if (biased == 0x7FF) { finite = 0; break; }
        int64_t m = biased > 0 ? fraction | (INT64_C(1) << 52) : fraction;
        if (bits < 0) m = -m;
        int64_t e = biased > 0 ? biased - 1 : 0;
        int64_t lo = (int64_t)((uint64_t)m & 0x3FFFF), mid = (int64_t)(((uint64_t)m >> 18) & 0x3FFFF);
        int64_t hi = (m - mid * (INT64_C(1) << 18) - lo) / (INT64_C(1) << 36);  /* exact: a floor */
        sums[e][0] += hi; sums[e][1] += mid; sums[e][2] += lo; sums[e][3] += 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&values);
    PyObject *out = NULL;
    if (!finite) {
        PyErr_SetString(PyExc_ValueError, "an exact sum takes finite values only");
    } else if ((out = PyList_New(0)) != NULL) {
        for (int e = 0; e < 2047; e++) {
            if (!sums[e][3]) continue;
            PyObject *t = Py_BuildValue("(iLLLL)", e, (long long)sums[e][0], (long long)sums[e][1],
                                        (long long)sums[e][2], (long long)sums[e][3]);
            if (t == NULL || PyList_Append(out, t) < 0) { Py_XDECREF(t); Py_CLEAR(out); break; }
            Py_DECREF(t);
        }
    }
    PyMem_RawFree(sums);
    return out;
}

/* tied_rows(group, width, score, out): the rows (int64, ascending, into out) that tie with a
   neighbour, one of the same group (int32 or int64) and the same score; returns how many. */
static PyObject *tied_rows(PyObject *self, PyObject *args) {
    Py_buffer group, score, out;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*w*", &group, &width, &score, &out)) return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, k = 0;
    if (!check_width(width)) goto done;
    if (group.len != n * width || out.len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "tied_rows: buffer sizes disagree");
        goto done;
    }
    const double *sc = score.buf;
    int64_t *o = out.buf;
    Py_BEGIN_ALLOW_THREADS
    int prev = 0;  /* row i - 1 ties with row i - 2 */
    for (int64_t i = 1; i < n; i++) {
        int tie = offset_at(group.buf, width, i) == offset_at(group.buf, width, i - 1) && sc[i] == sc[i - 1];
        if (tie && !prev) o[k++] = i - 1;
        if (tie) o[k++] = i;
        prev = tie;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(k);
done:
    PyBuffer_Release(&group); PyBuffer_Release(&score); PyBuffer_Release(&out);
    return result;
}

/* sort_ties(group, width, score, rows, head, length, order): each run of rows (from tied_rows:
   neighbours of one group and one score) put in order by doc id descending, stably: by head
   (the id's first 8 bytes, big-endian) descending, then length descending (ids of at most 8
   bytes); order[rows[a + i]] = the row that takes that place. */
static PyObject *sort_ties(PyObject *self, PyObject *args) {
    Py_buffer group, score, rows, head, length, order;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*w*", &group, &width, &score, &rows, &head, &length, &order)) return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, k = rows.len / 8, bad = -1;
    if (!check_width(width)) goto done;
    if (group.len != n * width || order.len != n * 8 || head.len != k * 8 || length.len != k * 8) {
        PyErr_SetString(PyExc_ValueError, "sort_ties: buffer sizes disagree");
        goto done;
    }
    const double *sc = score.buf;
    const int64_t *r = rows.buf, *len = length.buf;
    const uint64_t *h = head.buf;
    int64_t *o = order.buf;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t a = 0, b; a < k; a = b) {
        if (r[a] < 0 || r[a] >= n) { bad = a; break; }
        for (b = a + 1; b < k && r[b] == r[b - 1] + 1 && r[b] < n
             && offset_at(group.buf, width, r[b]) == offset_at(group.buf, width, r[a]) && sc[r[b]] == sc[r[a]]; b++) {}
        for (int64_t i = a; i < b; i++) {  /* insertion of row i among rows a..i-1, by key descending */
            int64_t j = i;
            uint64_t hv = h[i];
            int64_t lv = len[i];
            int64_t who = r[i];
            while (j > a) {
                int64_t prev = o[r[j - 1]] - r[a] + a;  /* the position in rows of the row placed there */
                if (h[prev] > hv || (h[prev] == hv && len[prev] >= lv)) break;
                o[r[j]] = o[r[j - 1]];
                j--;
            }
            o[r[j]] = who;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "tied row %lld is not a row", (long long)bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&group); PyBuffer_Release(&score); PyBuffer_Release(&rows);
    PyBuffer_Release(&head); PyBuffer_Release(&length); PyBuffer_Release(&order);
    return result;
}

/* The number syntax taken here (anything else declines the block): -?[0-9]+ for integers of at
   most 18 digits after leading zeros; -?[0-9]+(\.[0-9]+)? for decimals whose digits, leading
   zeros aside, make an integer M <= 2^53 with at most 22 after the point: M and 10^k are then
   exact doubles and one division rounds M / 10^k correctly, as Python's float() does. */
static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int read_number(const uint8_t *s, const uint8_t *e, int integer, int64_t *i_out, double *f_out) {
    int negative = s < e && *s == '-';
    s += negative;
    if (s == e) return 0;
    uint64_t m = 0;
    int digits = 0, after = -1;  /* after: digits after the point, -1 before it */
    for (; s < e; s++) {
        if (*s == '.' && !integer && after < 0) { after = 0; continue; }
        if (*s < '0' || *s > '9') return 0;
        if (m == 0 && *s == '0' && after < 0) continue;  /* a leading zero */
        m = m * 10 + (uint64_t)(*s - '0');
        digits++;
        if (after >= 0) after++;
        if (digits > 18) return 0;
    }
    if (after == 0 || (s[-1] == '.')) return 0;  /* "5." is left to the other parsers */
    if (integer) { *i_out = negative ? -(int64_t)m : (int64_t)m; return 1; }
    if (m > (UINT64_C(1) << 53) || after > 22) return 0;
    double v = after > 0 ? (double)m / POW10[after] : (double)m;
    *f_out = negative ? -v : v;
    return 1;
}

/* parse_columns(data, start, end, delimiter, ncols, query_at, doc_at, value_at, integer,
   q_offsets, q_data, d_offsets, d_data, values): the lines of data[start:end] in the simple form
   (ASCII; fields cut by the delimiter alone; ncols fields a line, none empty; no other
   whitespace, no \r, no blank line, no query id starting with '#'; values in read_number's
   syntax), as columnar.parse_block reads them: the query and doc ids as Arrow large-string
   offsets and bytes, the values (int64 or float64). Returns the number of lines, or -1 for a
   block outside that form (the caller then parses it as before). */
static PyObject *parse_columns(PyObject *self, PyObject *args) {
    Py_buffer data, qo, qd, dof, dd, vals;
    Py_ssize_t start, end;
    int delim, ncols, qa, da, va, integer;
    if (!PyArg_ParseTuple(args, "y*nniiiiiiw*w*w*w*w*", &data, &start, &end, &delim, &ncols, &qa, &da, &va,
                          &integer, &qo, &qd, &dof, &dd, &vals)) return NULL;
    PyObject *result = NULL;
    int64_t cap = qo.len / 8 - 1, rows = 0;
    if (start < 0 || end < start || end > data.len || cap < 0 || dof.len != qo.len || vals.len != cap * 8
        || qd.len < end - start || dd.len < end - start || ncols < 1 || ncols > 64 || qa < 0 || qa >= ncols
        || da < 0 || da >= ncols || va < 0 || va >= ncols || (delim != ' ' && delim != '\t')) {
        PyErr_SetString(PyExc_ValueError, "parse_columns: arguments disagree");
        goto done;
    }
    uint8_t cls[256];  /* 0: a field's byte; 1: the delimiter; 2: a line end; 3: outside the form */
    for (int c = 0; c < 256; c++) cls[c] = c >= 0x80 || c == '\r' || c == '\t' || c == ' ' || c == '\v' || c == '\f' ? 3 : 0;
    cls[delim] = 1;
    cls['\n'] = 2;
    const uint8_t *d = data.buf, *p = d + start, *stop = d + end;
    int64_t *q_off = qo.buf, *d_off = dof.buf, qpos = 0, dpos = 0;
    uint8_t *q_out = qd.buf, *d_out = dd.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    q_off[0] = d_off[0] = 0;
    while (ok && p < stop) {
        if (rows >= cap) { ok = 0; break; }
        int field = 0;
        for (;;) {  /* one field a turn */
            const uint8_t *f = p;
            while (p < stop && cls[*p] == 0) p++;
            int kind = p < stop ? cls[*p] : 2;
            if (kind == 3 || p == f || field >= ncols) { ok = 0; break; }
            if (field == qa) {
                if (*f == '#') { ok = 0; break; }
                memcpy(q_out + qpos, f, (size_t)(p - f));
                qpos += p - f;
            }
            if (field == da) {
                memcpy(d_out + dpos, f, (size_t)(p - f));
                dpos += p - f;
            }
            if (field == va) {
                int64_t iv;
                double fv;
                if (!read_number(f, p, integer, &iv, &fv)) { ok = 0; break; }
                if (integer) ((int64_t *)vals.buf)[rows] = iv; else ((double *)vals.buf)[rows] = fv;
            }
            field++;
            if (kind == 2) { p++; break; }  /* the line's end (or the block's) */
            p++;  /* past the delimiter */
        }
        if (!ok || field != ncols) { ok = 0; break; }
        rows++;
        q_off[rows] = qpos;
        d_off[rows] = dpos;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromLongLong(ok ? rows : -1);
done:
    PyBuffer_Release(&data); PyBuffer_Release(&qo); PyBuffer_Release(&qd);
    PyBuffer_Release(&dof); PyBuffer_Release(&dd); PyBuffer_Release(&vals);
    return result;
}

static PyMethodDef methods[] = {
    {"parse_columns", parse_columns, METH_VARARGS, "parse_columns(data, start, end, delimiter, ncols, query_at, doc_at, "
                                                   "value_at, integer, q_offsets, q_data, d_offsets, d_data, values) -> rows or -1"},
    {"tied_rows", tied_rows, METH_VARARGS, "tied_rows(group, width, score, out) -> count"},
    {"sort_ties", sort_ties, METH_VARARGS, "sort_ties(group, width, score, rows, head, length, order)"},
    {"split_sums", split_sums, METH_VARARGS, "split_sums(values) -> [(E, hi, mid, lo, count)]"},
    {"ideal_dcg", ideal_dcg, METH_VARARGS, "ideal_dcg(codes, labels, cutoff, gain, discount, out) -> bool"},
    {"equal_at", equal_at, METH_VARARGS, "equal_at(offsets_a, width_a, data_a, rows_a, offsets_b, width_b, data_b, rows_b, out)"},
    {"increasing_codes", increasing_codes, METH_VARARGS, "increasing_codes(offsets, width, data, previous, code, out)"},
    {"empty_field", empty_field, METH_VARARGS, "empty_field(data, start, end, delimiter, first_column, has_cr) -> bool"},
    {"fingerprints", fingerprints, METH_VARARGS, "fingerprints(offsets, width, data, out)"},
    {"heads", heads, METH_VARARGS, "heads(offsets, width, data, rows, head, length)"},
    {"distinct_small", distinct_small, METH_VARARGS, "distinct_small(fp, codes, width, most) -> bool"},
    {"find_in_ranges", find_in_ranges, METH_VARARGS, "find_in_ranges(keys, starts, codes, width, needles, out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", "C loops for ndcg_plugin.speedups", -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
