// Twin of shared_mutex_norace.cpp: a reader that also writes the table under
// its shared lock. Shared holders do not exclude each other, so its write
// races with the other reader's read.
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

static std::shared_mutex rw;
static long table[4] = {1, 2, 3, 4};
static long sums[2];

int main() {
    std::thread r0([] {
        for (int i = 0; i < 50; i++) {
            std::shared_lock<std::shared_mutex> g(rw);
            sums[0] += table[1]; // RACE
        }
    });
    std::thread r1([] {
        for (int i = 0; i < 50; i++) {
            std::shared_lock<std::shared_mutex> g(rw);
            table[1] += 1; // RACE
            sums[1] += table[2];
        }
    });
    r0.join();
    r1.join();
    std::printf("%ld %ld\n", sums[0], sums[1]);
    return 0;
}
