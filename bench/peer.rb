# frozen_string_literal: true

require "fileutils"
require "json"
require "socket"

module Bench
  # The local peer every client is measured against: Debian's nginx on a loopback port,
  # serving canned answers so that the server is never the bottleneck. Started and
  # stopped by the bench itself.
  #
  #   POST /fast/v1/chat/completions    canned OpenAI chat-completions JSON (`return 200`)
  #   POST /stream/v1/chat/completions  canned 5000-event SSE stream (a static file)
  #   POST /slow/v1/chat/completions    the canned JSON after 50 ms (echo_sleep, a real
  #                                     nginx timer of libnginx-mod-http-echo: no thread
  #                                     of nginx blocks while it waits)
  #   POST /fail/v1/chat/completions    503 with an OpenAI error body
  #   POST /drip/v1/chat/completions    a stream of DRIP_EVENTS events over DRIP_SECONDS,
  #                                     each flushed after an echo_sleep (nginx timers)
  #
  # Debian: `apt-get install nginx-light` (nginx + libnginx-mod-http-echo).
  class Peer
    STREAM_EVENTS = 5000
    DRIP_EVENTS = 50
    DRIP_SECONDS = 2.0
    MODEL = "gpt-4o-mini-2024-07-18"
    ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"

    attr_reader :port, :dir

    def self.answer_json
      JSON.generate(
        id: "chatcmpl-bench0001", object: "chat.completion", created: 1_730_000_000, model: MODEL,
        choices: [{ index: 0, message: { role: "assistant", content: "Hello! How can I help you today?",
                                         refusal: nil },
                    logprobs: nil, finish_reason: "stop" }],
        usage: { prompt_tokens: 9, completion_tokens: 9, total_tokens: 18 },
        system_fingerprint: "fp_bench"
      )
    end

    # 5000 content events, then a finish event with usage, then [DONE].
    def self.stream_body(events = STREAM_EVENTS)
      out = +""
      events.times do |i|
        ev = { id: "chatcmpl-bench0002", object: "chat.completion.chunk", created: 1_730_000_000, model: MODEL,
               choices: [{ index: 0, delta: { content: "tok#{i % 10} " }, logprobs: nil, finish_reason: nil }] }
        out << "data: " << JSON.generate(ev) << "\n\n"
      end
      fin = { id: "chatcmpl-bench0002", object: "chat.completion.chunk", created: 1_730_000_000, model: MODEL,
              choices: [{ index: 0, delta: {}, logprobs: nil, finish_reason: "stop" }],
              usage: { prompt_tokens: 9, completion_tokens: events, total_tokens: events + 9 } }
      out << "data: " << JSON.generate(fin) << "\n\ndata: [DONE]\n\n"
    end

    # One SSE event (with its blank line) per delta, then the finish event and [DONE].
    def self.drip_events(events = DRIP_EVENTS)
      deltas = Array.new(events) do |i|
        ev = { id: "chatcmpl-bench0003", object: "chat.completion.chunk", created: 1_730_000_000, model: MODEL,
               choices: [{ index: 0, delta: { content: "tok#{i % 10} " }, logprobs: nil, finish_reason: nil }] }
        "data: #{JSON.generate(ev)}\n\n"
      end
      fin = { id: "chatcmpl-bench0003", object: "chat.completion.chunk", created: 1_730_000_000, model: MODEL,
              choices: [{ index: 0, delta: {}, logprobs: nil, finish_reason: "stop" }],
              usage: { prompt_tokens: 9, completion_tokens: events, total_tokens: events + 9 } }
      deltas << "data: #{JSON.generate(fin)}\n\ndata: [DONE]\n\n"
    end

    def self.error_json
      JSON.generate(error: { message: "The server is overloaded", type: "server_error", param: nil, code: nil })
    end

    def initialize(dir:)
      @dir = dir
    end

    def base_url(kind)
      "http://127.0.0.1:#{@port}/#{kind}/v1"
    end

    def url(kind)
      "#{base_url(kind)}/chat/completions"
    end

    def start
      nginx = ENV["NGINX"] || %w[/usr/sbin/nginx /usr/bin/nginx].find { |p| File.executable?(p) }
      abort "bench: nginx not found; on Debian: apt-get install -y nginx-light" unless nginx
      abort "bench: #{ECHO_MODULE} missing; on Debian: apt-get install -y nginx-light" unless File.exist?(ECHO_MODULE)

      FileUtils.rm_rf(@dir)
      FileUtils.mkdir_p(File.join(@dir, "www"))
      File.write(File.join(@dir, "www", "stream.sse"), self.class.stream_body)
      @port = free_port
      conf = File.join(@dir, "nginx.conf")
      File.write(conf, config)
      @pid = spawn(nginx, "-p", @dir, "-c", conf, "-e", File.join(@dir, "error.log"),
                   out: File.join(@dir, "stdout.log"), err: File.join(@dir, "stderr.log"))
      wait_until_up
      self
    end

    def stop
      return unless @pid

      Process.kill(:QUIT, @pid)
      Process.wait(@pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      @pid = nil
    end

    private

    def free_port
      s = TCPServer.new("127.0.0.1", 0)
      s.addr[1]
    ensure
      s&.close
    end

    def wait_until_up
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
      loop do
        TCPSocket.new("127.0.0.1", @port).close
        return
      rescue Errno::ECONNREFUSED
        if Process.wait(@pid, Process::WNOHANG) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          abort "bench: nginx did not start:\n#{File.read(File.join(@dir, 'error.log')) rescue ''}" \
                "#{File.read(File.join(@dir, 'stderr.log')) rescue ''}"
        end
        sleep 0.02
      end
    end

    # The drip stream: an event, a flush and a sleep, DRIP_EVENTS times. The newlines of
    # an event are literal ones inside the quoted string.
    def drip_directives
      pause = format("%.3f", DRIP_SECONDS / DRIP_EVENTS)
      events = self.class.drip_events
      lines = events[0...-1].flat_map { |e| ["echo -n #{q(e)};", "echo_flush;", "echo_sleep #{pause};"] }
      (lines << "echo -n #{q(events[-1])};").join("\n              ")
    end

    # nginx's single-quoted strings: backslash and quote escaped.
    def q(str)
      "'#{str.gsub("\\") { "\\\\" }.gsub("'") { "\\'" }}'"
    end

    def config
      www = File.join(@dir, "www")
      <<~CONF
        load_module #{ECHO_MODULE};
        #{Process.uid.zero? ? 'user root;' : ''}
        daemon off;
        worker_processes 1;
        pid #{File.join(@dir, 'nginx.pid')};
        error_log #{File.join(@dir, 'error.log')} warn;
        worker_rlimit_nofile 16384;
        events { worker_connections 8192; }
        http {
          access_log off;
          client_body_temp_path #{File.join(@dir, 'body')};
          proxy_temp_path #{File.join(@dir, 'proxy')};
          fastcgi_temp_path #{File.join(@dir, 'fastcgi')};
          uwsgi_temp_path #{File.join(@dir, 'uwsgi')};
          scgi_temp_path #{File.join(@dir, 'scgi')};
          keepalive_requests 100000000;
          keepalive_timeout 300s;
          tcp_nodelay on;
          sendfile on;
          client_body_buffer_size 64k;
          server {
            listen 127.0.0.1:#{@port} backlog=4096;
            default_type application/json;
            location = /fast/v1/chat/completions {
              return 200 #{q(self.class.answer_json)};
            }
            location = /fail/v1/chat/completions {
              return 503 #{q(self.class.error_json)};
            }
            location = /slow/v1/chat/completions {
              echo_read_request_body;
              echo_sleep 0.05;
              echo -n #{q(self.class.answer_json)};
            }
            location = /drip/v1/chat/completions {
              echo_read_request_body;
              default_type text/event-stream;
              #{drip_directives}
            }
            location = /stream/v1/chat/completions {
              # The static module refuses POST with 405; error_page redirects that to
              # the same file as a GET, which is what a canned stream needs.
              alias #{File.join(www, 'stream.sse')};
              default_type text/event-stream;
              error_page 405 =200 $uri;
            }
          }
        }
      CONF
    end
  end
end
