// Double-checked locking done right: the fast-path check is an acquire load
// of an std::atomic pointer, the slow path re-checks under a mutex and
// publishes with a release store. Every thread that sees the pointer sees
// the constructed object: no race.
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

struct Widget {
    int size;
    Widget() : size(12) {}
};

static std::atomic<Widget *> instance{nullptr};
static std::mutex m;

static Widget *get() {
    Widget *w = instance.load(std::memory_order_acquire);
    if (!w) {
        std::lock_guard<std::mutex> g(m);
        w = instance.load(std::memory_order_relaxed);
        if (!w) {
            w = new Widget;
            instance.store(w, std::memory_order_release);
        }
    }
    return w;
}

static int sizes[4];

int main() {
    std::vector<std::thread> t;
    for (int i = 0; i < 4; i++) t.emplace_back([i] { sizes[i] = get()->size; });
    for (auto &x : t) x.join();
    std::printf("%d %d %d %d\n", sizes[0], sizes[1], sizes[2], sizes[3]);
    delete instance.load();
    return 0;
}
