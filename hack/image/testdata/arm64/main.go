// Command arm64 is the smallest program, built for linux/arm64 by the image test to fill that platform's
// layer without building the whole manager for it (make image does).
package main

func main() {}
