# frozen_string_literal: true

require "spec_helper"
require "openssl"

# Issue 15: a TLS certificate that fails verification is configuration drift (a proxy
# that intercepts, a wrong host, an expired certificate), like a refused connection:
# not retried, and never hidden by a backup.
RSpec.describe "A provider whose TLS certificate fails verification" do
  include_context "with fake providers"

  # A loopback TLS server with a self-signed certificate that counts handshakes.
  class SelfSignedServer
    attr_reader :port

    def initialize
      key = OpenSSL::PKey::RSA.new(2048)
      cert = OpenSSL::X509::Certificate.new
      cert.version = 2
      cert.serial = 1
      cert.subject = cert.issuer = OpenSSL::X509::Name.parse("/CN=127.0.0.1")
      cert.public_key = key.public_key
      cert.not_before = Time.now - 60
      cert.not_after = Time.now + 3600
      cert.sign(key, OpenSSL::Digest.new("SHA256"))
      context = OpenSSL::SSL::SSLContext.new
      context.cert = cert
      context.key = key
      @tcp = TCPServer.new("127.0.0.1", 0)
      @port = @tcp.local_address.ip_port
      @ssl = OpenSSL::SSL::SSLServer.new(@tcp, context)
      @ssl.start_immediately = false
      @handshakes = 0
      @lock = Mutex.new
      @thread = Thread.new { serve }
    end

    def handshakes
      @lock.synchronize { @handshakes }
    end

    def stop
      @tcp.close
      @thread.join(2) || @thread.kill
    end

    private

    def serve
      loop do
        conn = @ssl.accept
        @lock.synchronize { @handshakes += 1 }
        begin
          conn.accept # the client gives up on the certificate
        rescue OpenSSL::SSL::SSLError, SystemCallError, IOError
          nil
        ensure
          conn.close
        end
      end
    rescue IOError, SystemCallError
      nil # closed by #stop
    end
  end

  let(:tls) { SelfSignedServer.new }

  before do
    LlmFailover.configure do |c|
      c.provider :self_signed, api: :openai, api_key: "sk-test-TLS", base_url: "https://127.0.0.1:#{tls.port}/v1"
      # The handshake is within the connect timeout: on a loaded machine (or under ASan)
      # fast_policy's 2 s could run out before the certificate is seen, a retryable
      # timeout that the backup would then answer.
      c.connect_timeout = SpecTime.scaled(30)
    end
  end

  after { tls.stop }

  it "raises ConnectionRefusedError at once: no retry, no failover" do
    chat = LlmFailover.chat(model: "gpt-4o", provider: :self_signed, max_retries: 2,
                            backup_model: "claude-sonnet-4-6", backup_provider: :anthropic)
    expect { chat.ask("Hi") }.to raise_error(LlmFailover::ConnectionRefusedError) { |e|
      expect(e.message).to match(/TLS certificate verification failed: .*certificate/i)
      expect(e.retryable?).to be(false)
      expect(e.attempts.size).to eq(1)
    }
    expect(tls.handshakes).to eq(1)
    expect(backup.request_count).to eq(0)
  end
end
