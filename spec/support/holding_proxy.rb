# frozen_string_literal: true

require "socket"

# A loopback TCP proxy in front of a Redis that holds one command: the first write
# sending +command+ (as RESP sends it: the array's first string, so not COMMAND INFO
# naming it) waits until #release, so that a spec can change the store between a
# client's two round trips without touching the client.
class HoldingProxy
  def initialize(port:, command:)
    @upstream = port
    @needle = /(?:\A|\r\n)\*\d+\r\n\$\d+\r\n#{Regexp.escape(command)}\r\n/n
    @listener = TCPServer.new("127.0.0.1", 0)
    @lock = Mutex.new
    @changed = ConditionVariable.new
    @state = :waiting # then :holding, then :released
    @sockets = []
    @threads = [Thread.new { accept_loop }]
  end

  def url
    "redis://127.0.0.1:#{@listener.addr[1]}/0"
  end

  # @return [Boolean] whether the command arrived (and is held) within +timeout+ seconds
  def wait_until_held(timeout: 10)
    @lock.synchronize do
      @changed.wait(@lock, timeout) if @state == :waiting
      @state == :holding
    end
  end

  def release
    @lock.synchronize do
      @state = :released
      @changed.broadcast
    end
  end

  def close
    release
    @listener.close
    @sockets.each { |s| s.close unless s.closed? }
    @threads.each { |t| t.kill.join }
  end

  private

  def accept_loop
    loop do
      client = @listener.accept
      server = TCPSocket.new("127.0.0.1", @upstream)
      @sockets.push(client, server)
      @threads << Thread.new { pump(client, server, hold: true) } << Thread.new { pump(server, client, hold: false) }
    end
  rescue IOError, SystemCallError
    nil # closed
  end

  def pump(from, to, hold:)
    loop do
      data = from.readpartial(65_536)
      hold_if_named(data) if hold
      to.write(data)
    end
  rescue IOError, SystemCallError
    to.close unless to.closed?
  end

  def hold_if_named(data)
    @lock.synchronize do
      return unless @state == :waiting && data.match?(@needle)

      @state = :holding
      @changed.broadcast
      @changed.wait(@lock) until @state == :released
    end
  end
end
