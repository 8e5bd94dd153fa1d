// The initialization of a function-local static is race-free, but what the
// threads do with the object afterwards is not: both increment its field
// without a lock. Checks that the guard's synchronization does not hide
// later races on the object.
#include <cstdio>
#include <thread>

struct Stats {
    long calls = 0;
};

static Stats &stats() {
    static Stats s;
    return s;
}

int main() {
    std::thread a([] { stats().calls++; }); // RACE
    std::thread b([] { stats().calls += 2; }); // RACE
    a.join();
    b.join();
    std::printf("%ld\n", stats().calls);
    return 0;
}
