# frozen_string_literal: true

require "socket"

# A tiny HTTP server on loopback for URL attachments: each path answers with a
# status, headers and a body given per path ({ "/x.png" => [200, { "content-type" =>
# "image/png" }, bytes] }; bytes an Array of pieces to drip them, x-pause seconds apart). It
# counts the requests per path.
class FileServer
  attr_reader :hits

  def initialize(routes)
    @routes = routes
    @hits = Hash.new(0)
    @server = TCPServer.new("127.0.0.1", 0)
    @thread = Thread.new { serve }
  end

  def url(path)
    "http://127.0.0.1:#{@server.addr[1]}#{path}"
  end

  def stop
    @server.close
    @thread.join(2)
    @thread.kill
  end

  private

  def serve
    loop do
      client = @server.accept
      handle(client)
    rescue IOError, Errno::EBADF
      break
    end
  end

  def handle(client)
    line = client.gets.to_s
    path = line.split[1].to_s
    while (header = client.gets) && header != "\r\n"; end
    @hits[path] += 1
    status, headers, body = @routes.fetch(path, [404, {}, "not found"])
    pieces = body.is_a?(Array) ? body : [body] # an Array: written piece by piece, a pause between
    length = pieces.sum(&:bytesize)
    head = headers.merge("content-length" => length.to_s, "connection" => "close")
    client.write("HTTP/1.1 #{status} X\r\n#{head.map { |k, v| "#{k}: #{v}\r\n" }.join}\r\n")
    pieces.each_with_index do |piece, i|
      sleep(headers.fetch("x-pause", 0.1).to_f) if i.positive?
      client.write(piece)
    end
  rescue Errno::EPIPE, Errno::ECONNRESET
    nil # the client left early
  ensure
    client&.close
  end
end
