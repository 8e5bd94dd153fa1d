/* Two threads each allocate a block of N atomics, store to every one
   (seq_cst) and free it, ROUNDS times: a run touches 2 * N * ROUNDS atomics
   while it holds at most 2 * N (plus what the recorder's 64 MiB quarantine
   keeps back from reuse). What an analysis keeps for atomics must follow
   what the program holds, not all it ever had.
   Usage: atomic_churn [N [ROUNDS]]   (defaults 1000 20000) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static int n = 1000, rounds = 20000;

static void *work(void *arg) {
  (void)arg;
  for (int r = 0; r < rounds; r++) {
    atomic_int *a = malloc(n * sizeof(atomic_int));
    if (!a) abort();
    for (int i = 0; i < n; i++) atomic_store(&a[i], i);
    free(a);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) n = atoi(argv[1]);
  if (argc > 2) rounds = atoi(argv[2]);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  return 0;
}
