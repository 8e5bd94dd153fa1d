// Built with -fno-threadsafe-statics (see the manifest): the function-local
// static is then guarded by a plain flag with no synchronization, so two
// threads calling counter() race on the guard and on the object (it may be
// constructed twice).
#include <cstdio>
#include <thread>

struct Counter {
    long hits;
    Counter() : hits(100) {} // RACE
};

static Counter &counter() {
    static Counter c; // RACE
    return c;
}

static long seen[2];

int main() {
    std::thread a([] { seen[0] = counter().hits; }); // RACE
    std::thread b([] { seen[1] = counter().hits; }); // RACE
    a.join();
    b.join();
    std::printf("%ld %ld\n", seen[0], seen[1]);
    return 0;
}
