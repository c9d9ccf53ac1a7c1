# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"

# A real redis-server on a free loopback port, in a temporary directory, with no
# persistence. Started by the specs that need it and stopped after them; it can be
# stopped and started again on the same port (the outage specs).
class RedisServer
  BINARY = ENV.fetch("REDIS_SERVER", "redis-server")

  def self.available?
    system("#{BINARY} --version", out: File::NULL, err: File::NULL)
  end

  # @return [String, nil] "7.0.15"
  def self.version
    return @version if defined?(@version)

    @version = (`#{BINARY} --version 2>/dev/null`[/\bv=(\d+(?:\.\d+)*)/, 1] if available?)
  end

  def self.major_version
    version.to_s.split(".").first.to_i
  end

  # Redis 8 brings vector sets (VADD, VSIM) built in.
  def self.vector_sets?
    major_version >= 8
  end

  attr_reader :port

  def initialize
    @dir = Dir.mktmpdir("llm_failover_redis")
    @port = free_port
    @pid = nil
  end

  def url
    "redis://127.0.0.1:#{@port}/0"
  end

  def start
    @pid = Process.spawn(BINARY, "--port", @port.to_s, "--bind", "127.0.0.1", "--dir", @dir,
                         "--save", "", "--appendonly", "no", "--daemonize", "no",
                         out: File.join(@dir, "log"), err: [:child, :out])
    wait_until_up
    self
  end

  def stop
    return unless @pid

    Process.kill("TERM", @pid)
    Process.wait(@pid)
    @pid = nil
  rescue Errno::ESRCH, Errno::ECHILD
    @pid = nil
  end

  def running?
    !@pid.nil?
  end

  def destroy
    stop
    FileUtils.rm_rf(@dir)
  end

  private

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def wait_until_up
    200.times do
      TCPSocket.new("127.0.0.1", @port).tap do |s|
        s.write("PING\r\n")
        line = s.gets
        s.close
        return if line&.start_with?("+PONG")
      end
    rescue SystemCallError
      sleep 0.02
    end
    raise "redis-server did not start on port #{@port}: #{File.read(File.join(@dir, 'log')) rescue ''}"
  end
end
