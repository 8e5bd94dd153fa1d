// std::recursive_mutex taken twice by the same thread (outer and inner
// function), by two threads: only the outermost unlock releases it, and
// every access is inside: no race.
#include <cstdio>
#include <mutex>
#include <thread>

static std::recursive_mutex m;
static long total;

static void add(long v) {
    std::lock_guard<std::recursive_mutex> g(m);
    total += v;
}

static void add_twice(long v) {
    std::lock_guard<std::recursive_mutex> g(m);
    add(v);
    total += v;
}

int main() {
    std::thread a([] { for (int i = 0; i < 50; i++) add_twice(1); });
    std::thread b([] { for (int i = 0; i < 50; i++) add_twice(2); });
    a.join();
    b.join();
    std::printf("%ld\n", total);
    return 0;
}
