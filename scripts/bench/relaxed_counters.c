/* THREADS threads each add to one of COUNTERS shared counters with a
   relaxed fetch_add and read another back relaxed, ROUNDS times, with a
   mutex-protected step every 64 rounds: the worst case for the edges CP
   and WCP keep between relaxed atomic accesses that HB already orders
   (`RelaxedEdge`), since every access of every thread is one's source.
   Usage: relaxed_counters [THREADS [COUNTERS [ROUNDS]]]  (defaults 4 16 200000) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static int threads = 4, counters = 16, rounds = 200000;
static atomic_long *c;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *work(void *arg) {
  long id = (long)arg, sum = 0;
  for (int r = 0; r < rounds; r++) {
    atomic_fetch_add_explicit(&c[(id + r) % counters], 1, memory_order_relaxed);
    sum += atomic_load_explicit(&c[(id * 7 + r) % counters], memory_order_relaxed);
    if (r % 64 == 0) {
      pthread_mutex_lock(&m);
      total += sum & 1;
      pthread_mutex_unlock(&m);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) threads = atoi(argv[1]);
  if (argc > 2) counters = atoi(argv[2]);
  if (argc > 3) rounds = atoi(argv[3]);
  c = calloc(counters, sizeof *c);
  pthread_t *t = malloc(threads * sizeof *t);
  if (!c || !t) abort();
  for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  return total < 0;
}
