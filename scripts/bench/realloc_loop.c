/* Memory allocated again and again (issue 28, retired variables): two
 * threads each allocate 3,000 blocks of 0.5-2 KiB, fill and read them, and
 * free them; glibc hands the same addresses back, so each block's cells
 * are retired at the next allocation over them. A mutex-protected sum
 * every 100 blocks. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg) {
    long sum = 0;
    for (int i = 0; i < 3000; i++) {
        size_t n = 512 + (i % 7) * 256;
        unsigned char *p = malloc(n);
        memset(p, i, n);
        for (size_t k = 0; k < n; k += 3) sum += p[k];
        free(p);
        if (i % 100 == 0) { pthread_mutex_lock(&m); total += sum; pthread_mutex_unlock(&m); }
    }
    return arg;
}
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return total == 42;
}
