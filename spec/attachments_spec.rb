# frozen_string_literal: true

require "spec_helper"
require "stringio"
require "tempfile"
require_relative "support/file_server"

# Images and PDFs with a user message (issue 28): the canonical Attachment, its
# rendering per protocol through the core, failover between protocols, limits, URL
# downloads and complete after a failure. :openai is the primary (OpenAI protocol),
# :anthropic the backup (Anthropic protocol), each a FakeProvider.
RSpec.describe "Attachments" do
  include_context "with fake providers"

  PNG = ("\x89PNG\r\n\x1A\n".b + "\x00\x00\x00\rIHDR".b + "pixels" * 10).freeze
  PDF = "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".b.freeze

  def png_file
    file = Tempfile.new(["photo", ".png"])
    file.binmode
    file.write(PNG)
    file.flush
    file
  end

  def pdf_file
    file = Tempfile.new(["report", ".pdf"])
    file.binmode
    file.write(PDF)
    file.flush
    file
  end

  def last_request(fake)
    fake.requests.last
  end

  describe LlmFailover::Attachment do
    it "reads a path, an IO, a Hash and a blob-like object to one canonical form with a content digest" do
      file = png_file
      io = StringIO.new(PDF)
      blob = Struct.new(:download, :content_type, :filename, :byte_size).new(PDF, "application/pdf", "blob.pdf", PDF.bytesize)
      from_path = described_class.from(file.path)
      from_hash = described_class.from({ data: PNG, mime_type: "image/png", filename: "x.png" })

      expect(from_path.mime_type).to eq("image/png")
      expect(from_path.filename).to eq(File.basename(file.path))
      expect(from_path.digest).to eq(Digest::SHA256.hexdigest(PNG))
      expect(from_hash.digest).to eq(from_path.digest)
      expect(described_class.from(io).mime_type).to eq("application/pdf")
      expect(described_class.from(blob)).to have_attributes(mime_type: "application/pdf", filename: "blob.pdf", data: PDF)
      expect(described_class.from(blob).blob).to equal(blob) # a store with ActiveStorage attaches it as it is
      expect(described_class.from("https://example.com/a/photo.jpg?sig=1")).to have_attributes(
        mime_type: "image/jpeg", data: nil, url: "https://example.com/a/photo.jpg?sig=1"
      )
    end

    it "refuses a type that is not an image or a PDF, naming the file" do
      expect { described_class.from({ data: "plain text", filename: "notes.txt" }) }
        .to raise_error(ArgumentError, /"notes.txt" is not a PNG, JPEG, GIF, WebP image or a PDF/)
      expect { described_class.from({ data: PNG, mime_type: "application/pdf", filename: "x.pdf" }) }
        .to raise_error(ArgumentError, %r{"x.pdf" is declared application/pdf but its bytes are image/png})
      expect { described_class.from("https://example.com/page.html") }
        .to raise_error(ArgumentError, /"page.html".*give \{ url:, mime_type: \}/)
    end

    it "refuses a file over the size limit before reading it, naming the file and the limit" do
      expect { described_class.from(png_file.path, max_bytes: 10) }
        .to raise_error(ArgumentError, /is #{PNG.bytesize} bytes, over the limit of 10 bytes/)
    end
  end

  [false, true].each do |streamed|
    context(streamed ? "streamed" : "not streamed") do
      def ask(chat, text, **options)
        return chat.ask(text, **options) unless streamed_call?

        chunks = []
        reply = chat.ask(text, **options) { |c| chunks << c }
        expect(chunks).not_to be_empty
        reply
      end

      define_method(:streamed_call?) { streamed }

      it "sends an image and a PDF as OpenAI content parts" do
        primary.enqueue({ text: "a photo and a report" })
        reply = ask(LlmFailover.chat(model: "gpt-4o", provider: :openai), "What is in these?",
                    with: [png_file.path, pdf_file.path])

        expect(reply.content).to eq("a photo and a report")
        request = last_request(primary)
        parts = request.json["messages"].last["content"]
        expect(parts.first).to eq("type" => "text", "text" => "What is in these?")
        expect(parts[1]["type"]).to eq("image_url")
        expect(parts[1]["image_url"]["url"]).to start_with("data:image/png;base64,")
        expect(parts[2]["type"]).to eq("file")
        expect(parts[2]["file"]["filename"]).to end_with(".pdf")
        expect(request.attachments.map { |a| [a.kind, a.mime_type, a.data] })
          .to eq([[:image, "image/png", PNG], [:document, "application/pdf", PDF]])
      end

      it "sends an image and a PDF as Anthropic image and document blocks" do
        backup.enqueue({ text: "seen" })
        reply = ask(LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic), "Describe",
                    with: [{ data: PNG, mime_type: "image/png", filename: "x.png" }, StringIO.new(PDF)])

        expect(reply.content).to eq("seen")
        blocks = last_request(backup).json["messages"].last["content"]
        expect(blocks.map { |b| b["type"] }).to eq(%w[image document text])
        expect(blocks[0]["source"]).to include("type" => "base64", "media_type" => "image/png")
        expect(blocks[1]["source"]).to include("type" => "base64", "media_type" => "application/pdf")
        expect(blocks[2]).to eq("type" => "text", "text" => "Describe")
        expect(last_request(backup).attachments.map(&:data)).to eq([PNG, PDF])
      end

      it "fails over from OpenAI to Anthropic with an image and a PDF, each in its own form" do
        primary.default = { error: :server }
        backup.enqueue({ text: "from the backup" })
        reply = ask(failover_chat(max_retries: 0), "Both", with: [png_file.path, pdf_file.path])

        expect(reply.provider).to eq(:anthropic)
        expect(primary.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image_url file])
        expect(backup.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image document])
        expect(backup.requests.last.attachments.map(&:data)).to eq([PNG, PDF])
      end
    end
  end

  it "fails over from Anthropic to OpenAI with an image and a PDF" do
    backup.default = { error: :server }
    primary.enqueue({ text: "from openai" })
    chat = LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic, backup_model: "gpt-4o",
                            backup_provider: :openai, max_retries: 0)
    reply = chat.ask("Both", with: [png_file.path, pdf_file.path])

    expect(reply.provider).to eq(:openai)
    expect(backup.requests.last.attachments.map { |a| a.part["type"] }).to eq(%w[image document])
    expect(primary.requests.last.attachments.map { |a| [a.part["type"], a.data] })
      .to eq([["image_url", PNG], ["file", PDF]])
  end

  it "complete after a failed ask resends the stored attachments, stored once" do
    primary.default = { error: :server }
    chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 0)
    expect { chat.ask("Read it", with: pdf_file.path) }.to raise_error(LlmFailover::ServerError)
    expect(chat.messages.first.attachments.map(&:data)).to eq([PDF])

    primary.default = { text: "read" }
    expect(chat.complete.content).to eq("read")
    expect(primary.requests.last.attachments.map(&:data)).to eq([PDF])
    expect(chat.messages.count { |m| m.role == "user" }).to eq(1)
  end

  describe "what a target takes" do
    before do
      LlmFailover.configure do |c|
        c.provider :openai, api: :openai, api_key: FakeProviderHelpers::PRIMARY_KEY,
                            base_url: primary.base_url(:openai), documents: false, max_attachment_bytes: 64
      end
    end

    it "sends a PDF to the backup alone when the primary takes no documents (documents: false)" do
      backup.enqueue({ text: "pdf read" })
      reply = failover_chat.ask("Read", with: pdf_file.path)
      expect(reply.provider).to eq(:anthropic)
      expect(primary.request_count).to eq(0)
      expect(backup.requests.last.attachments.map(&:kind)).to eq([:document])
    end

    it "refuses, before storing anything, a PDF no target takes" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { chat.ask("Read", with: pdf_file.path) }
        .to raise_error(ArgumentError, %r{report.*\.pdf.*openai/gpt-4o takes no PDFs \(documents: false\)})
      expect(chat.messages).to be_empty
      expect(primary.request_count).to eq(0)
    end

    it "refuses a file over every target's size limit and too many files, naming the limit" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      big = { data: PNG + ("x" * 100), mime_type: "image/png", filename: "big.png" }
      expect { chat.ask("Look", with: big) }
        .to raise_error(ArgumentError, /"big.png" is #{PNG.bytesize + 100} bytes, over the limit of 64 bytes/)
      expect { chat.ask("Look", with: [png_file.path] * 21) }
        .to raise_error(ArgumentError, /21 attachments, over the limit of 20 per message/)
      expect(chat.messages).to be_empty
    end

    it "checks files with check_attachments as ask would, storing and sending nothing (a form before its job)" do
      chat = failover_chat
      checked = chat.check_attachments([png_file.path, pdf_file.path])
      expect(checked.map(&:mime_type)).to eq(%w[image/png application/pdf]) # the backup takes the PDF
      solo = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { solo.check_attachments(pdf_file.path) }.to raise_error(ArgumentError, /takes no PDFs \(documents: false\)/)
      # An upload's size is refused as it is, before the bytes are read.
      upload = StringIO.new(PNG + ("x" * 100))
      expect { solo.check_attachments(upload) }
        .to raise_error(ArgumentError, /is #{PNG.bytesize + 100} bytes, over the limit of 64 bytes/)
      expect(upload.pos).to eq(0)
      expect(chat.messages + solo.messages).to be_empty
      expect(primary.request_count + backup.request_count).to eq(0)
    end
  end

  describe "URL attachments" do
    let(:files) do
      FileServer.new(
        "/photo.png" => [200, { "content-type" => "image/png" }, PNG],
        "/report.pdf" => [200, { "content-type" => "application/pdf" }, PDF],
        "/moved.pdf" => [302, { "location" => "/report.pdf" }, ""],
        "/fake.pdf" => [200, { "content-type" => "text/html" }, "<html></html>"]
      )
    end

    after { files.stop }

    it "sends a URL as a URL where the target takes one (Anthropic blocks, an OpenAI image_url)" do
      backup.enqueue({ text: "ok" })
      primary.enqueue({ text: "ok" })
      url = "https://files.example.com/photo.png"
      LlmFailover.chat(model: "claude-sonnet-4-6", provider: :anthropic).ask("See", with: url)
      LlmFailover.chat(model: "gpt-4o", provider: :openai).ask("See", with: url)

      expect(backup.requests.last.attachments.first.part["source"]).to eq("type" => "url", "url" => url)
      expect(primary.requests.last.attachments.first.part["image_url"]).to eq("url" => url)
    end

    it "downloads a PDF once for an OpenAI target (its file parts take no URL), a private host allowed explicitly" do
      LlmFailover.configuration.attachment_private_hosts = true
      primary.default = { error: :server }
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai, max_retries: 1)
      expect { chat.ask("Read", with: files.url("/moved.pdf")) }.to raise_error(LlmFailover::ServerError)
      primary.default = { text: "read" }
      chat.complete

      expect(primary.requests.map { |r| r.attachments.first.data }).to eq([PDF] * 3)
      expect(files.hits["/report.pdf"]).to eq(1) # once, for the ask, its retry and the complete
    end

    it "refuses a loopback host unless allowed, a wrong content type, and shows no credentials" do
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      url = files.url("/report.pdf").sub("http://", "http://user:s3cret@") + "?token=SIGNED"
      expect { chat.ask("Read", with: url) }.to raise_error(ArgumentError) { |e|
        expect(e.message).to include("127.0.0.1", "a private or loopback address")
        expect(e.message).not_to include("s3cret", "SIGNED")
      }
      LlmFailover.configuration.attachment_private_hosts = true # a chat's configuration is copied when made
      chat = LlmFailover.chat(model: "gpt-4o", provider: :openai)
      expect { chat.ask("Read", with: files.url("/fake.pdf")) }
        .to raise_error(ArgumentError, %r{served as text/html, not an image or a PDF})
      expect(chat.messages).to be_empty
      expect(files.hits["/report.pdf"]).to eq(0)
    end
  end

  it "keys the response cache by the attachments' content digest" do
    LlmFailover.configuration.cache = LlmFailover::MemoryCache.new
    primary.default = { text: "fresh" }
    chat = -> { LlmFailover.chat(model: "gpt-4o", provider: :openai) }
    chat.call.ask("What?", with: { data: PNG, mime_type: "image/png" })
    chat.call.ask("What?", with: { data: PNG, mime_type: "image/png", filename: "renamed.png" })
    expect(primary.request_count).to eq(1)
    chat.call.ask("What?", with: { data: PNG + "other".b, mime_type: "image/png" })
    expect(primary.request_count).to eq(2)
  end
end
