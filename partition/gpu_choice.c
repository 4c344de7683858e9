/* Owns choosing, ordering and weighting the GPUs of a run from the topology
 * model.
 *
 * Links are compared by level (the rank of their quality among the model's
 * distinct qualities) and a group of links by its sorted levels, weakest
 * first: the group whose weakest link is better wins, then the second
 * weakest, and so on. This puts the bottleneck first (a set with one
 * cross-socket pair loses to a set with none, however good its other links
 * are) without weighing link classes against each other by hand. */
#include "partition/gpu_choice.h"

#include "partition/gpu_entries.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Beyond this many candidate sets the set is grown greedily and improved
 * by swaps; exhaustive search covers every real node (16 GPUs choose 8 is
 * 12870 sets). */
#define EXHAUSTIVE_SET_LIMIT 200000
/* Work allowed to the order search (nodes x GPUs^2). Its bound settles
 * nested topologies in a few nodes; past the budget the best path found so
 * far stands, never worse than the greedy path the search starts from. */
#define ORDER_SEARCH_WORK 40000000L

struct model {
    int n;
    int level[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS]; /* greater is better */
    int key[MGPU_TOPOLOGY_MAX_GPUS]; /* tie-break order: near the process, then index */
    int near[MGPU_TOPOLOGY_MAX_GPUS];
};

static int compare_quality(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static long long pair_quality(const struct mgpu_topology *t, int i, int j)
{
    long long a = mgpu_link_quality(&t->links[i][j]), b = mgpu_link_quality(&t->links[j][i]);
    return a < b ? a : b;
}

static int nearness(const struct mgpu_topology *t, const struct mgpu_gpu *g)
{
    if (t->process_numa >= 0 && g->numa_node == t->process_numa)
        return 2;
    if (t->process_package >= 0 && g->package == t->process_package)
        return 1;
    return 0;
}

static void build_model(const struct mgpu_topology *t, struct model *m)
{
    int n = t->gpu_count;
    m->n = n;
    long long qualities[MGPU_TOPOLOGY_MAX_GPUS * (MGPU_TOPOLOGY_MAX_GPUS - 1) / 2];
    int nq = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            qualities[nq++] = pair_quality(t, i, j);
    qsort(qualities, (size_t)nq, sizeof qualities[0], compare_quality);
    for (int i = 0; i < n; i++) {
        m->level[i][i] = 0;
        for (int j = i + 1; j < n; j++) {
            long long q = pair_quality(t, i, j);
            long long *at = bsearch(&q, qualities, (size_t)nq, sizeof q, compare_quality);
            while (at > qualities && at[-1] == q) /* the first of equal values */
                at--;
            m->level[i][j] = m->level[j][i] = (int)(at - qualities);
        }
        m->near[i] = nearness(t, &t->gpus[i]);
        m->key[i] = (2 - m->near[i]) * n + i;
    }
}

/* --- which GPUs ------------------------------------------------------------- */

/* A set's score as one vector compared lexicographically, greater better:
 * its pair levels ascending, its nearness, then its tie-break keys
 * ascending and negated (lower keys win). */
static int set_score(const struct model *m, const int *set, int k, int *score)
{
    int len = 0;
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++)
            score[len++] = m->level[set[a]][set[b]];
    qsort(score, (size_t)len, sizeof score[0], compare_int);
    int near = 0, *keys = score + len + 1;
    for (int a = 0; a < k; a++) {
        near += m->near[set[a]];
        keys[a] = m->key[set[a]];
    }
    score[len] = near;
    qsort(keys, (size_t)k, sizeof keys[0], compare_int);
    for (int a = 0; a < k; a++)
        keys[a] = -keys[a];
    return len + 1 + k;
}

static int compare_scores(const int *a, const int *b, int len)
{
    for (int i = 0; i < len; i++)
        if (a[i] != b[i])
            return a[i] > b[i] ? 1 : -1;
    return 0;
}

static double combinations(int n, int k)
{
    double c = 1;
    for (int i = 1; i <= k; i++)
        c = c * (n - k + i) / i;
    return c;
}

struct set_search {
    const struct model *m;
    int k, len;
    int *best, *best_score, *score;
};

/* Replaces the best set with `set` when it scores higher. */
static bool offer_set(struct set_search *s, const int *set)
{
    s->len = set_score(s->m, set, s->k, s->score);
    if (s->best_score[0] != -1 && compare_scores(s->score, s->best_score, s->len) <= 0)
        return false;
    memcpy(s->best, set, (size_t)s->k * sizeof *set);
    memcpy(s->best_score, s->score, (size_t)s->len * sizeof *s->score);
    return true;
}

static void choose_exhaustively(struct set_search *s)
{
    int k = s->k, n = s->m->n, set[MGPU_TOPOLOGY_MAX_GPUS];
    for (int i = 0; i < k; i++)
        set[i] = i;
    for (;;) {
        offer_set(s, set);
        int i = k - 1;
        while (i >= 0 && set[i] == n - k + i)
            i--;
        if (i < 0)
            return;
        set[i]++;
        for (int j = i + 1; j < k; j++)
            set[j] = set[j - 1] + 1;
    }
}

static bool in_set(const int *set, int k, int g)
{
    for (int i = 0; i < k; i++)
        if (set[i] == g)
            return true;
    return false;
}

/* Grows the set one GPU at a time (each time the GPU that scores best),
 * then swaps a member for an outsider while that scores higher. */
static void choose_greedily(struct set_search *s)
{
    int k = s->k, n = s->m->n, set[MGPU_TOPOLOGY_MAX_GPUS];
    for (int size = 1; size <= k; size++) {
        struct set_search grow = *s;
        grow.k = size;
        grow.best_score[0] = -1;
        for (int g = 0; g < n; g++) {
            if (in_set(set, size - 1, g))
                continue;
            set[size - 1] = g;
            offer_set(&grow, set);
        }
        memcpy(set, grow.best, (size_t)size * sizeof *set);
    }
    s->best_score[0] = -1;
    offer_set(s, set);
    for (int round = 0; round < 10 * n; round++) {
        bool improved = false;
        for (int a = 0; a < k && !improved; a++)
            for (int g = 0; g < n && !improved; g++) {
                if (in_set(s->best, k, g))
                    continue;
                memcpy(set, s->best, (size_t)k * sizeof *set);
                set[a] = g;
                improved = offer_set(s, set);
            }
        if (!improved)
            break;
    }
}

/* --- their order -------------------------------------------------------------- */

struct order_search {
    const struct model *m;
    int k;
    const int *set;
    int path[MGPU_TOPOLOGY_MAX_GPUS], edges[MGPU_TOPOLOGY_MAX_GPUS];
    bool used[MGPU_TOPOLOGY_MAX_GPUS];
    int best[MGPU_TOPOLOGY_MAX_GPUS], best_edges[MGPU_TOPOLOGY_MAX_GPUS];
    long nodes, node_budget;
    /* the pairs of the set (positions in it), best level first */
    int pair_count;
    struct set_pair {
        int a, b, level;
    } pairs[MGPU_TOPOLOGY_MAX_GPUS * (MGPU_TOPOLOGY_MAX_GPUS - 1) / 2];
};

static int find_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* The levels of the path's links so far (depth >= 1 GPUs placed) and an
 * optimistic bound on the links still to come, ascending. The rest of the
 * path runs through the last GPU and every unplaced one (r GPUs): of its
 * r - 1 links, at most r - c can be at level x or better, where c is the
 * number of groups those GPUs form when joined by such links. Exact for
 * nested groups (switch in host bridge in socket), and never too low. */
static void bounded_edges(const struct order_search *s, int depth, int *out)
{
    int len = 0, last = s->path[depth - 1];
    for (int i = 1; i < depth; i++)
        out[len++] = s->edges[i];
    int parent[MGPU_TOPOLOGY_MAX_GPUS], groups = 0;
    bool in_play[MGPU_TOPOLOGY_MAX_GPUS];
    for (int a = 0; a < s->k; a++) {
        parent[a] = a;
        in_play[a] = !s->used[a] || s->set[a] == last;
        groups += in_play[a];
    }
    int in_rest = groups, covered = 0;
    for (int e = 0; e < s->pair_count && groups > 1;) {
        int level = s->pairs[e].level;
        for (; e < s->pair_count && s->pairs[e].level == level; e++) {
            const struct set_pair *p = &s->pairs[e];
            if (!in_play[p->a] || !in_play[p->b])
                continue;
            int ra = find_root(parent, p->a), rb = find_root(parent, p->b);
            if (ra != rb) {
                parent[ra] = rb;
                groups--;
            }
        }
        for (; covered < in_rest - groups; covered++)
            out[len++] = level;
    }
    qsort(out, (size_t)len, sizeof *out, compare_int);
}

static int compare_prefix_keys(const struct order_search *s, int depth)
{
    for (int i = 0; i < depth; i++) {
        int a = s->m->key[s->path[i]], b = s->m->key[s->best[i]];
        if (a != b)
            return a < b ? 1 : -1;
    }
    return 0;
}

static void search_order(struct order_search *s, int depth)
{
    int k = s->k;
    if (depth == k) {
        int sorted[MGPU_TOPOLOGY_MAX_GPUS];
        memcpy(sorted, s->edges + 1, (size_t)(k - 1) * sizeof *sorted);
        qsort(sorted, (size_t)(k - 1), sizeof *sorted, compare_int);
        int c = compare_scores(sorted, s->best_edges, k - 1);
        if (c > 0 || (c == 0 && compare_prefix_keys(s, k) > 0)) {
            memcpy(s->best, s->path, (size_t)k * sizeof *s->path);
            memcpy(s->best_edges, sorted, (size_t)(k - 1) * sizeof *sorted);
        }
        return;
    }
    if (++s->nodes > s->node_budget)
        return;
    /* candidates in tie-break order, so that among equal paths the first
     * found is the preferred one */
    int order[MGPU_TOPOLOGY_MAX_GPUS], count = 0;
    for (int a = 0; a < k; a++)
        if (!s->used[a])
            order[count++] = a;
    for (int x = 1; x < count; x++)
        for (int y = x; y > 0 && s->m->key[s->set[order[y]]] < s->m->key[s->set[order[y - 1]]];
             y--) {
            int tmp = order[y];
            order[y] = order[y - 1];
            order[y - 1] = tmp;
        }
    for (int c = 0; c < count; c++) {
        int a = order[c], v = s->set[a];
        s->used[a] = true;
        s->path[depth] = v;
        s->edges[depth] = depth > 0 ? s->m->level[s->path[depth - 1]][v] : 0;
        int bound[MGPU_TOPOLOGY_MAX_GPUS];
        bounded_edges(s, depth + 1, bound);
        int cmp = compare_scores(bound, s->best_edges, k - 1);
        if (cmp > 0 || (cmp == 0 && compare_prefix_keys(s, depth + 1) >= 0))
            search_order(s, depth + 1);
        s->used[a] = false;
    }
}

/* Nearest neighbour from the preferred GPU: the search's first incumbent. */
static void greedy_order(struct order_search *s)
{
    bool taken[MGPU_TOPOLOGY_MAX_GPUS] = {false};
    int k = s->k;
    for (int depth = 0; depth < k; depth++) {
        int pick = -1;
        for (int a = 0; a < k; a++) {
            if (taken[a])
                continue;
            if (pick < 0) {
                pick = a;
                continue;
            }
            int v = s->set[a], p = s->set[pick];
            int lv = depth > 0 ? s->m->level[s->best[depth - 1]][v] : 0;
            int lp = depth > 0 ? s->m->level[s->best[depth - 1]][p] : 0;
            if (lv > lp || (lv == lp && s->m->key[v] < s->m->key[p]))
                pick = a;
        }
        if (pick < 0)
            break; /* not reached: depth < k leaves a GPU untaken */
        taken[pick] = true;
        s->best[depth] = s->set[pick];
    }
    for (int i = 1; i < k; i++)
        s->best_edges[i - 1] = s->m->level[s->best[i - 1]][s->best[i]];
    qsort(s->best_edges, (size_t)(k - 1), sizeof *s->best_edges, compare_int);
}

static int by_level_descending(const void *x, const void *y)
{
    const struct set_pair *a = x, *b = y;
    return (a->level < b->level) - (a->level > b->level);
}

static void order_set(const struct model *m, const int *set, int k, int *out)
{
    struct order_search s = {.m = m, .k = k, .set = set};
    for (int a = 0; a < k; a++)
        for (int b = a + 1; b < k; b++)
            s.pairs[s.pair_count++] = (struct set_pair){a, b, m->level[set[a]][set[b]]};
    qsort(s.pairs, (size_t)s.pair_count, sizeof s.pairs[0], by_level_descending);
    greedy_order(&s);
    if (k > 2) {
        s.node_budget = ORDER_SEARCH_WORK / ((long)k * k);
        search_order(&s, 0);
    }
    memcpy(out, s.best, (size_t)k * sizeof *out);
}

/* --- weights and the whole decision ------------------------------------------ */

void mgpu_gpu_weights(int n, const int sms[], const int clock_khz[], double out[])
{
    bool all_sms = sms != NULL, all_clocks = clock_khz != NULL;
    for (int i = 0; i < n; i++) {
        if (sms == NULL || sms[i] <= 0)
            all_sms = false;
        if (clock_khz == NULL || clock_khz[i] <= 0)
            all_clocks = false;
    }
    double total = 0;
    for (int i = 0; i < n; i++) {
        out[i] = 1;
        if (all_sms)
            out[i] = (double)sms[i] * (all_clocks ? (double)clock_khz[i] : 1.0);
        total += out[i];
    }
    for (int i = 0; i < n; i++)
        out[i] /= total;
}

int mgpu_choose_gpus(const struct mgpu_topology *t, int k, struct mgpu_gpu_choice *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (t->gpu_count <= 0) {
        snprintf(err, errlen, "the topology (%s) has no GPU", t->source);
        return -1;
    }
    if (k < 1 || k > t->gpu_count) {
        snprintf(err, errlen,
                 "-n %d asks for %d GPUs but the topology (%s) has %d; use -n %d or "
                 "fewer",
                 k, k, t->source, t->gpu_count, t->gpu_count);
        return -1;
    }
    struct model m;
    build_model(t, &m);

    int pairs = k * (k - 1) / 2, len = pairs + 1 + k;
    int *buffers = malloc(3 * (size_t)len * sizeof *buffers + (size_t)k * sizeof *buffers);
    if (buffers == NULL) {
        snprintf(err, errlen, "out of memory choosing %d GPUs", k);
        return -1;
    }
    struct set_search s = {
        .m = &m, .k = k, .best = buffers + 3 * len, .best_score = buffers, .score = buffers + len};
    s.best_score[0] = -1; /* no set yet: levels are never negative */
    if (combinations(t->gpu_count, k) <= EXHAUSTIVE_SET_LIMIT)
        choose_exhaustively(&s);
    else
        choose_greedily(&s);

    int ordered[MGPU_TOPOLOGY_MAX_GPUS];
    order_set(&m, s.best, k, ordered);
    free(buffers);

    int sms[MGPU_TOPOLOGY_MAX_GPUS], clocks[MGPU_TOPOLOGY_MAX_GPUS];
    out->count = k;
    out->worst_link = t->links[ordered[0]][ordered[0]];
    for (int i = 0; i < k; i++) {
        const struct mgpu_gpu *g = &t->gpus[ordered[i]];
        out->gpus[i] = g->cuda_index;
        sms[i] = g->multiprocessors;
        clocks[i] = g->clock_khz;
        out->near_process += m.near[ordered[i]] > 0;
        for (int j = 0; j < k; j++) {
            const struct mgpu_link *l = &t->links[ordered[i]][ordered[j]];
            if (i != j && mgpu_link_quality(l) < mgpu_link_quality(&out->worst_link))
                out->worst_link = *l;
        }
    }
    mgpu_gpu_weights(k, sms, clocks, out->weights);
    return 0;
}

int mgpu_gpus_as_listed(const struct mgpu_topology *t, const int *list, int len,
                        struct mgpu_gpu_choice *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < 1 || len > MGPU_TOPOLOGY_MAX_GPUS) {
        snprintf(err, errlen, "--gpus lists %d GPUs; list 1 to %d", len, MGPU_TOPOLOGY_MAX_GPUS);
        return -1;
    }
    struct mgpu_gpu_entries e;
    int at[MGPU_TOPOLOGY_MAX_GPUS] = {0}; /* the topology's position of each listed GPU */
    for (int i = 0; i < len && i < MGPU_TOPOLOGY_MAX_GPUS; i++)
        if ((at[i] = mgpu_topology_find_cuda(t, list[i])) < 0) {
            snprintf(err, errlen,
                     "--gpus lists GPU %d but the topology (%s) has no such GPU; list GPUs from "
                     "0 to %d",
                     list[i], t->source, t->gpu_count - 1);
            return -1;
        }
    int largest = 0;
    for (int i = 0; i < len; i++)
        largest = list[i] > largest ? list[i] : largest;
    if (mgpu_gpu_entries_make(list, len, largest + 1, &e, err, errlen) != 0)
        return -1;
    double device_weight[MGPU_MAX_GPUS] = {0}, shares[MGPU_TOPOLOGY_MAX_GPUS];
    int sms[MGPU_TOPOLOGY_MAX_GPUS] = {0}, clocks[MGPU_TOPOLOGY_MAX_GPUS] = {0},
        first[MGPU_TOPOLOGY_MAX_GPUS] = {0};
    int devices = 0;
    for (int i = 0; i < len; i++)
        if (mgpu_gpu_entries_first_on_device(&e, i)) {
            sms[devices] = t->gpus[at[i]].multiprocessors;
            clocks[devices] = t->gpus[at[i]].clock_khz;
            first[devices++] = i;
        }
    mgpu_gpu_weights(devices, sms, clocks, shares);
    for (int d = 0; d < devices; d++)
        device_weight[list[first[d]]] = shares[d];
    mgpu_gpu_entries_weights(&e, device_weight, out->weights);
    out->count = len;
    out->worst_link = t->links[at[0]][at[0]];
    for (int i = 0; i < len; i++) {
        out->gpus[i] = list[i];
        for (int j = 0; j < len; j++) {
            const struct mgpu_link *l = &t->links[at[i]][at[j]];
            if (list[i] != list[j] && mgpu_link_quality(l) < mgpu_link_quality(&out->worst_link))
                out->worst_link = *l;
        }
    }
    return 0;
}
