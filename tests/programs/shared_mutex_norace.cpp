// std::shared_mutex: two readers hold it shared at the same time and only
// read (concurrent reads never race); a writer holds it exclusively to
// update: every write is ordered with every read, no race.
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

static std::shared_mutex rw;
static long table[4] = {1, 2, 3, 4};
static long sums[2];

int main() {
    auto reader = [](int r) {
        for (int i = 0; i < 50; i++) {
            std::shared_lock<std::shared_mutex> g(rw);
            sums[r] += table[i % 4];
        }
    };
    std::thread r0(reader, 0), r1(reader, 1);
    std::thread w([] {
        for (int i = 0; i < 50; i++) {
            std::unique_lock<std::shared_mutex> g(rw);
            table[i % 4] += 1;
        }
    });
    r0.join();
    r1.join();
    w.join();
    std::printf("%ld %ld\n", sums[0], sums[1]);
    return 0;
}
