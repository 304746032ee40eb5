/* notify_cost_loop.c: what a user-notify round trip would add to a connect
 * (docs/escape.md, known escape 6). Not built by CMake; by hand:
 *   gcc -O2 -o /tmp/loop bench/notify_cost_loop.c
 *   for m in tcp unix open vsock; do /tmp/loop $m 10000; supervise -q -- /tmp/loop $m 10000; done
 * tcp/unix: loopback connect+accept (decided in the kernel under supervise);
 * open: a write-open, which supervise notifies (the round trip's price);
 * vsock: socket(AF_VSOCK), refused through user-notify under supervise. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){
  int n=argc>2?atoi(argv[2]):20000;
  if(!strcmp(argv[1],"tcp")){
    int l=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={.sin_family=AF_INET,.sin_addr.s_addr=htonl(INADDR_LOOPBACK)};
    bind(l,(void*)&a,sizeof a);listen(l,4096);socklen_t len=sizeof a;getsockname(l,(void*)&a,&len);
    double t0=now();
    for(int i=0;i<n;i++){int s=socket(AF_INET,SOCK_STREAM,0);if(connect(s,(void*)&a,sizeof a)){perror("connect");return 1;}int c=accept(l,0,0);close(c);close(s);}
    printf("tcp connect+accept: %.1f us/iter\n",(now()-t0)/n/1000);
  } else if(!strcmp(argv[1],"unix")){
    int l=socket(AF_UNIX,SOCK_STREAM,0);struct sockaddr_un a={.sun_family=AF_UNIX};snprintf(a.sun_path,sizeof a.sun_path,"%s/b.sock",getcwd(0,0));unlink(a.sun_path);
    bind(l,(void*)&a,sizeof a);listen(l,4096);
    double t0=now();
    for(int i=0;i<n;i++){int s=socket(AF_UNIX,SOCK_STREAM,0);if(connect(s,(void*)&a,sizeof a)){perror("connect");return 1;}int c=accept(l,0,0);close(c);close(s);}
    printf("unix connect+accept: %.1f us/iter\n",(now()-t0)/n/1000);
  } else if(!strcmp(argv[1],"open")){
    double t0=now();
    for(int i=0;i<n;i++){int fd=open("o.txt",O_WRONLY|O_CREAT,0644);close(fd);}
    printf("open(O_WRONLY) (notified under supervise): %.1f us/iter\n",(now()-t0)/n/1000);
  } else if(!strcmp(argv[1],"vsock")){
    double t0=now();
    for(int i=0;i<n;i++){int s=socket(40,SOCK_STREAM,0);if(s>=0)close(s);}
    printf("socket(AF_VSOCK): %.1f us/iter\n",(now()-t0)/n/1000);
  }
  return 0;}
