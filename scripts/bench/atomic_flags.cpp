// The shape of BS::thread_pool's loop tests (issue 28): THREADS workers
// each increment their own block of FLAGS std::atomic counters (a seq_cst
// read-modify-write: an acquire and a release), then the main thread reads
// every counter back. Usage: atomic_flags [THREADS] [FLAGS]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const std::size_t threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 96;
    const std::size_t n = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 2000000;
    std::vector<std::atomic<long>> flags(n);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; t++)
        pool.emplace_back([&flags, t, threads, n] {
            for (std::size_t i = t * n / threads; i < (t + 1) * n / threads; i++)
                ++flags[i];
        });
    for (auto& t : pool)
        t.join();
    long sum = 0;
    for (auto& f : flags)
        sum += f;
    std::printf("%ld\n", sum);
    return sum == static_cast<long>(n) ? 0 : 1;
}
