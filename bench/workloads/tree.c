/* tree.c - many small objects: each round builds a binary search tree of n
 * nodes with random keys, each node carrying a separately allocated name of
 * random length, looks every key up, deletes a random half, inserts n/2
 * new nodes and tears the whole tree down.  -t runs that many independent
 * trees in parallel threads.
 *
 *	-t threads   -n nodes   -r rounds   -a/-b name sizes
 */
#include <stdlib.h>
#include <string.h>

#include "xbw.h"

struct node {
	struct node *left, *right;
	uint64_t key;
	size_t len;
	char *name;
};

struct tree_thread {
	const struct xbw_args *a;
	int id;
	long live;
};

static struct node *node_new(uint64_t key, uint64_t *rng, const struct xbw_args *a)
{
	struct node *n = xbw_alloc("tree", sizeof *n);

	n->left = n->right = NULL;
	n->key = key;
	n->len = xbw_size(rng, a->min, a->max);
	n->name = xbw_alloc("tree", n->len);
	xbw_stamp(n->name, n->len, key);
	return n;
}

static void node_free(struct node *n)
{
	xbw_check("tree", n->name, n->len, n->key);
	free(n->name);
	free(n);
}

/* Returns 1 when inserted, 0 when the key was present (n is freed). */
static int insert(struct node **root, struct node *n)
{
	while (*root) {
		if (n->key == (*root)->key) {
			node_free(n);
			return 0;
		}
		root = n->key < (*root)->key ? &(*root)->left : &(*root)->right;
	}
	*root = n;
	return 1;
}

static struct node **find(struct node **root, uint64_t key)
{
	while (*root && (*root)->key != key)
		root = key < (*root)->key ? &(*root)->left : &(*root)->right;
	return root;
}

static void delete_at(struct node **at)
{
	struct node *n = *at;

	if (!n->left) {
		*at = n->right;
	} else if (!n->right) {
		*at = n->left;
	} else {
		struct node **m = &n->right;
		while ((*m)->left)
			m = &(*m)->left;
		struct node *succ = *m;
		*m = succ->right;
		succ->left = n->left;
		succ->right = n->right;
		*at = succ;
	}
	node_free(n);
}

/* Post-order teardown without recursion: rotate left children up. */
static long teardown(struct node *root)
{
	long count = 0;

	while (root) {
		if (root->left) {
			struct node *l = root->left;
			root->left = l->right;
			l->right = root;
			root = l;
		} else {
			struct node *next = root->right;
			node_free(root);
			root = next;
			count++;
		}
	}
	return count;
}

static void *tree_worker(void *arg)
{
	struct tree_thread *t = arg;
	const struct xbw_args *a = t->a;
	uint64_t rng = a->seed * 31 + (uint64_t)t->id;
	uint64_t *keys = xbw_alloc("tree", (size_t)a->n * sizeof *keys);

	for (long r = 0; r < a->rounds; r++) {
		struct node *root = NULL;
		long live = 0;

		for (long i = 0; i < a->n; i++) {
			keys[i] = xbw_rand(&rng) | 1; /* odd: never 0 */
			live += insert(&root, node_new(keys[i], &rng, a));
		}
		for (long i = 0; i < a->n; i++)
			if (!*find(&root, keys[i]))
				xbw_die("tree: key %llx lost", (unsigned long long)keys[i]);
		for (long i = 0; i < a->n; i += 2) {
			struct node **at = find(&root, keys[i]);
			if (*at) {
				delete_at(at);
				live--;
			}
		}
		for (long i = 0; i < a->n / 2; i++)
			live += insert(&root, node_new(xbw_rand(&rng) | 1, &rng, a));
		if (teardown(root) != live)
			xbw_die("tree: node count mismatch");
		t->live = live;
	}
	free(keys);
	return NULL;
}

static int tree_run(const struct xbw_args *a)
{
	struct tree_thread *t = xbw_alloc("tree", (size_t)a->threads * sizeof *t);

	for (int i = 0; i < a->threads; i++)
		t[i] = (struct tree_thread){.a = a, .id = i};
	xbw_start_threads(a->threads, tree_worker, t, sizeof *t);
	xbw_metric("nodes_per_round", "%ld", t[0].live);
	free(t);
	return 0;
}

const struct xbw_workload xbw_tree = {
	.name = "tree",
	.help = "many small objects: build a BST of n nodes (node + name), look "
		"up, delete half, reinsert, tear down; per round",
	.run = tree_run,
	.defaults = {.threads = 1, .n = 200000, .rounds = 3, .min = 8, .max = 64,
		     .seed = 1},
};
