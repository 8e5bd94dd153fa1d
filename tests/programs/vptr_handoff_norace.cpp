// Objects of classes with virtual functions, constructed and destroyed in
// several threads: each worker builds and destroys its own objects (their
// constructors and destructors update the vptr), and main hands objects it
// built to the workers through a mutex-protected queue; the worker that
// receives one calls it and deletes it. Every vptr update is ordered with
// every virtual call on the same object: no race.
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

struct Shape {
    virtual ~Shape() = default;
    virtual long area() const = 0;
};
struct Square : Shape {
    long s;
    explicit Square(long s) : s(s) {}
    long area() const override { return s * s; }
};
struct Rect : Square {
    long w;
    Rect(long s, long w) : Square(s), w(w) {}
    long area() const override { return s * w; }
};

static std::mutex m;
static std::deque<Shape *> queue;
static long totals[3];

int main() {
    for (int i = 0; i < 30; i++) queue.push_back(i % 2 ? static_cast<Shape *>(new Square(i)) : new Rect(i, 2));
    std::vector<std::thread> workers;
    for (int w = 0; w < 3; w++)
        workers.emplace_back([w] {
            for (int i = 0; i < 20; i++) {
                std::unique_ptr<Shape> own(i % 2 ? static_cast<Shape *>(new Rect(i, w)) : new Square(i));
                totals[w] += own->area();
                Shape *got = nullptr;
                {
                    std::lock_guard<std::mutex> g(m);
                    if (!queue.empty()) {
                        got = queue.front();
                        queue.pop_front();
                    }
                }
                if (got) {
                    totals[w] += got->area();
                    delete got;
                }
            }
        });
    for (auto &t : workers) t.join();
    std::printf("%ld\n", totals[0] + totals[1] + totals[2]);
    return 0;
}
