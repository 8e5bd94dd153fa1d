// A function-local static initialized by one thread and used later by
// another that finds it already initialized: the later thread takes the
// inlined fast path (an acquire load of the guard byte) and never calls
// __cxa_guard_acquire. That acquire load pairs with the release in
// __cxa_guard_release, so the constructor's writes are ordered before the
// reads: no race. (The sleep only makes the fast path the usual one; if the
// second thread came early it would take the slow path, also race-free.)
#include <cstdio>
#include <thread>
#include <unistd.h>

struct Table {
    int v[4];
    Table() {
        for (int i = 0; i < 4; i++) v[i] = i * i;
    }
};

__attribute__((noinline)) static const Table &table() {
    static Table t;
    return t;
}

static int first, second;

int main() {
    std::thread a([] { first = table().v[3]; });
    std::thread b([] {
        usleep(50000);
        second = table().v[2];
    });
    a.join();
    b.join();
    std::printf("%d %d\n", first, second);
    return 0;
}
