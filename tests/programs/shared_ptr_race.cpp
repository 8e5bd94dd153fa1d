// Twin of shared_ptr_norace.cpp: the reference counts are still race-free,
// but the threads now write the pointee without a lock, and a shared_ptr
// does not synchronize access to what it points to: a race on value.
// libstdc++ updates the counts with acq_rel read-modify-writes, which order
// whatever comes after one thread's count update after everything before
// another's. So main makes every copy before starting any thread, and each
// thread writes before its first count update: the writes stay unordered in
// every schedule.
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

struct Data {
    long value = 41;
    ~Data() { value = -1; }
};

static long seen[4];

int main() {
    auto sp = std::make_shared<Data>();
    sp->value = 42;
    std::vector<std::shared_ptr<Data>> copies(4, sp);
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++)
        t.emplace_back([i](std::shared_ptr<Data> mine) {
            seen[i] = mine->value++; // RACE
            std::shared_ptr<Data> copy = mine;
            seen[i] += copy.use_count() > 0;
        }, std::move(copies[i]));
    sp.reset();
    for (auto &x : t) x.join();
    std::printf("%ld %ld %ld %ld\n", seen[0], seen[1], seen[2], seen[3]);
    return 0;
}
