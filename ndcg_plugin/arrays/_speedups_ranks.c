/* The loops of the _speedups extension over a ranked run: the top rows of each query of a ranked
   run, and the DCG of ranked rows (see _speedups.c for what every loop promises, _speedups.h for
   the contract: a result, or None to decline). */
#include "_speedups.h"

static inline void store_at(void *buf, int width, int64_t i, int64_t v) {
    if (width == 8) ((int64_t *)buf)[i] = v; else ((int32_t *)buf)[i] = (int32_t)v;
}

/* ranked_top(score, sizes, depth, only, group, width, top, local) -> count or None:
   ranking.ranked_top, and the local codes join gives its rows. The queries are runs of rows
   (sizes: int64 rows per query, in order; score: float64 per row); of each query j where only[j]
   (uint8) is true, its first `depth` rows and the rows after them that tie with the depth-th:
   their row numbers ascending into top (int64), and into local (as group: int32 or int64 per
   row) j's number among the queries kept before it (j itself when every query is kept). None,
   with nothing promised of top and local, when the sizes do not add up to the rows, a row taken
   is not coded j in group, or the buffers' sizes disagree. */
PyObject *ndcg_ranked_top(PyObject *self, PyObject *args) {
    Py_buffer score, sizes, only, group, top, local;
    long long depth;
    int width;
    if (!PyArg_ParseTuple(args, "y*y*Ly*y*iw*w*", &score, &sizes, &depth, &only, &group, &width, &top, &local))
        return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, nq = sizes.len / 8, k = 0;
    if (!check_width(width) || score.len % 8 || sizes.len % 8 || only.len != nq || !holds(group.len, width, n)
        || !holds(top.len, 8, n) || !holds(local.len, width, n) || depth < 1) {
        result = declined();
        goto done;
    }
    const double *sc = score.buf;
    const int64_t *sz = sizes.buf;
    const uint8_t *keep = only.buf;
    int64_t *t = top.buf, start = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t j = 0, kept = 0; j < nq && ok; start += sz[j], j++) {
        int64_t size = sz[j];
        if (size < 0 || size > n - start) { ok = 0; break; }
        if (!keep[j]) continue;
        int64_t end = start + size, last = start + (size < depth ? size : depth);
        if (size > depth) {  /* the rows that tie with the depth-th follow it */
            double kth = sc[last - 1];
            while (last < end && sc[last] == kth) last++;
        }
        for (int64_t i = start; i < last; i++) {
            if (offset_at(group.buf, width, i) != j) { ok = 0; break; }
            t[k] = i;
            store_at(local.buf, width, k++, kept);
        }
        kept++;
    }
    Py_END_ALLOW_THREADS
    result = ok && start == n ? PyLong_FromLongLong(k) : declined();
done:
    PyBuffer_Release(&score); PyBuffer_Release(&sizes); PyBuffer_Release(&only);
    PyBuffer_Release(&group); PyBuffer_Release(&top); PyBuffer_Release(&local);
    return result;
}

/* dcg(q, width, rank, rel, gain, negative, discount, cutoff, out) -> True or None: NDCG's DCG sum as
   numpy's bincount adds it, row by row in order: out[q[i]] += g / discount[rank[i]] for each row
   with rank[i] < cutoff (every row for -1), g = gain[rel[i]] (the table numpy computed, by label)
   or `negative` for a label below 0. None when a code, a label or a rank has no place in its
   table, no row is added (numpy's bincount of no weights gives integers, not these doubles), or
   the sizes disagree (out is then the caller's to discard). */
PyObject *ndcg_dcg(PyObject *self, PyObject *args) {
    Py_buffer q, rank, rel, gain, disc, out;
    int width;
    double negative;
    long long cutoff;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*dy*Lw*", &q, &width, &rank, &rel, &gain, &negative, &disc, &cutoff, &out))
        return NULL;
    PyObject *result = NULL;
    int64_t n = rank.len / 8, nq = out.len / 8, ng = gain.len / 8, nd = disc.len / 8;
    if (!check_width(width) || rank.len % 8 || !holds(q.len, width, n) || !holds(rel.len, 8, n)) {
        result = declined();
        goto done;
    }
    const int64_t *r = rank.buf, *l = rel.buf;
    const double *g = gain.buf, *dc = disc.buf;
    double *o = out.buf;
    int ok = 1;
    int64_t added = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n; i++) {
        int64_t c = offset_at(q.buf, width, i), at = r[i], label = l[i];
        if (cutoff >= 0 && at >= cutoff) continue;
        if (c < 0 || c >= nq || at < 0 || at >= nd || label >= ng) { ok = 0; break; }
        o[c] += (label < 0 ? negative : g[label]) / dc[at];
        added++;
    }
    Py_END_ALLOW_THREADS
    result = ok && added > 0 ? Py_NewRef(Py_True) : declined();
done:
    PyBuffer_Release(&q); PyBuffer_Release(&rank); PyBuffer_Release(&rel);
    PyBuffer_Release(&gain); PyBuffer_Release(&disc); PyBuffer_Release(&out);
    return result;
}

/* ranked_rows(group, width, score, rel, judged, order, depth, whole_ties, q, rank, rel_out,
   judged_out, score_out) -> count or None: the arrays of ranking.ranked_arrays. Row order[i]
   (int64) takes place i; its rank is its position among the places of its group (int32 or int64
   per row), which must never go down in that order; the places kept are those ranked below
   `depth` (all for -1) and, with whole_ties, those after them in their group whose score equals
   the score at rank depth - 1. Each kept place gets its row's group, rank, rel (int64), judged
   (uint8) and score (float64), in order; None when a row of order is not a row, the groups go
   down, `depth` is neither -1 nor positive, or the sizes disagree. */
PyObject *ndcg_ranked_rows(PyObject *self, PyObject *args) {
    Py_buffer group, score, rel, judged, order, q, rank, rel_out, judged_out, score_out;
    int width, whole_ties;
    long long depth;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*y*Liw*w*w*w*w*", &group, &width, &score, &rel, &judged, &order, &depth,
                          &whole_ties, &q, &rank, &rel_out, &judged_out, &score_out))
        return NULL;
    PyObject *result = NULL;
    int64_t n = score.len / 8, m = order.len / 8, k = 0;
    if (!check_width(width) || score.len % 8 || order.len % 8 || !holds(group.len, width, n) || !holds(rel.len, 8, n)
        || judged.len != n || !holds(q.len, width, m) || !holds(rank.len, 8, m) || !holds(rel_out.len, 8, m)
        || judged_out.len != m || !holds(score_out.len, 8, m) || (depth < 1 && depth != -1)) {
        result = declined();
        goto done;
    }
    const double *sc = score.buf;
    const int64_t *o = order.buf, *l = rel.buf;
    const uint8_t *jd = judged.buf;
    int64_t *rk = rank.buf, *lo = rel_out.buf;
    uint8_t *jo = judged_out.buf;
    double *so = score_out.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    int64_t prev = 0, r = -1;
    double kth = 0.0;
    for (int64_t i = 0; i < m; i++) {
        int64_t row = o[i];
        if (row < 0 || row >= n) { ok = 0; break; }
        int64_t g = offset_at(group.buf, width, row);
        if (i > 0 && g < prev) { ok = 0; break; }
        r = i > 0 && g == prev ? r + 1 : 0;
        prev = g;
        double s = sc[row];
        if (r == depth - 1) kth = s;
        if (depth >= 0 && r >= depth && !(whole_ties && s == kth)) continue;
        store_at(q.buf, width, k, g);
        rk[k] = r; lo[k] = l[row]; jo[k] = jd[row]; so[k] = s;
        k++;
    }
    Py_END_ALLOW_THREADS
    result = ok ? PyLong_FromLongLong(k) : declined();
done:
    PyBuffer_Release(&group); PyBuffer_Release(&score); PyBuffer_Release(&rel); PyBuffer_Release(&judged);
    PyBuffer_Release(&order); PyBuffer_Release(&q); PyBuffer_Release(&rank); PyBuffer_Release(&rel_out);
    PyBuffer_Release(&judged_out); PyBuffer_Release(&score_out);
    return result;
}

/* sort_runs(keys, codes, most, order) -> True or None: np.argsort(keys, kind="stable") of keys whose
   codes (int64) never go down and whose high bits order them as the codes do (the pair keys of
   a qrels index: a later code's keys are all larger), in runs of equal codes of at most `most`
   rows: each run's keys sorted on their own, stably (an insertion sort: a query holds a few
   judgments). None, with order not to be used, when the codes go down, a run is longer, a key is
   smaller than a key of an earlier run, or the sizes disagree. */
PyObject *ndcg_sort_runs(PyObject *self, PyObject *args) {
    Py_buffer keys, codes, order;
    int most;
    if (!PyArg_ParseTuple(args, "y*y*iw*", &keys, &codes, &most, &order)) return NULL;
    PyObject *result = NULL;
    int64_t n = keys.len / 8;
    if (keys.len % 8 || !holds(codes.len, 8, n) || !holds(order.len, 8, n) || most < 1) {
        result = declined();
        goto done;
    }
    const uint64_t *k = keys.buf;
    const int64_t *c = codes.buf;
    int64_t *o = order.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    uint64_t top = 0;  /* the largest key of the runs before */
    for (int64_t a = 0, b; a < n && ok; a = b) {
        for (b = a + 1; b < n && c[b] == c[a]; b++) {}
        if ((b < n && c[b] < c[a]) || b - a > most) { ok = 0; break; }
        if (b - a <= 16) {  /* each row's place counted without a branch: the rows before it in the order */
            for (int64_t i = a; i < b; i++) {
                int64_t place = a;
                for (int64_t j = a; j < b; j++) place += (k[j] < k[i]) | ((k[j] == k[i]) & (j < i));
                o[place] = i;
            }
        } else {
            for (int64_t i = a; i < b; i++) {  /* insertion of row i among rows a..i-1 */
                int64_t j = i;
                while (j > a && k[o[j - 1]] > k[i]) { o[j] = o[j - 1]; j--; }
                o[j] = i;
            }
        }
        if (a > 0 && k[o[a]] < top) ok = 0;
        top = k[o[b - 1]];
    }
    Py_END_ALLOW_THREADS
    result = ok ? Py_NewRef(Py_True) : declined();
done:
    PyBuffer_Release(&keys); PyBuffer_Release(&codes); PyBuffer_Release(&order);
    return result;
}
