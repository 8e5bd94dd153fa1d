// std::call_once initializes a table exactly once; every thread that returns
// from call_once is ordered after the initializer: no race on the table.
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

static std::once_flag once;
static int table[8];
static int sums[4];

static void init_table() {
    for (int i = 0; i < 8; i++) table[i] = i * 3;
}

int main() {
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++)
        t.emplace_back([i] {
            std::call_once(once, init_table);
            sums[i] = table[i] + table[7 - i];
        });
    for (auto &x : t) x.join();
    std::printf("%d %d %d %d\n", sums[0], sums[1], sums[2], sums[3]);
    return 0;
}
