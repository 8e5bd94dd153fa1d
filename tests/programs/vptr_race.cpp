// A virtual call races with the destruction of the object: the destructor
// of Base stores Base's vtable pointer into the object (the vptr update that
// makes virtual calls during destruction resolve to Base), while the other
// thread reads the vptr to make its virtual call. Nothing orders them: a
// race on the vptr. The object lives in static storage and is never freed,
// and Base::speak is not pure, so the call is harmless in either order.
#include <cstdio>
#include <new>
#include <thread>

volatile int spoken; // written only by the virtual calls
volatile int noted;  // written only by the destructors

static void note_impl(const void *p) {
    noted += p != nullptr;
}
// Called through a volatile pointer: the compiler cannot see what it does,
// so it must keep the destructors' vptr stores even at -O2.
static void (*volatile note)(const void *) = note_impl;

struct Base {
    virtual void speak() { spoken += 1; }
    virtual ~Base() { note(this); } // RACE
};

struct Derived : Base {
    void speak() override { spoken += 2; }
    ~Derived() override { note(this); }
};

alignas(Derived) static unsigned char storage[sizeof(Derived)];

int main() {
    // Read back through a volatile pointer so that no call is devirtualized.
    static Base *volatile shared;
    shared = new (storage) Derived;
    Base *obj = shared;
    std::thread t([] {
        Base *obj = shared;
        obj->speak(); // RACE
    });
    obj->~Base(); // RACE
    t.join();
    std::printf("%d %d\n", (int)spoken, (int)noted);
    return 0;
}
