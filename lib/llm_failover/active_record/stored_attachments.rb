# frozen_string_literal: true

require "json"
require "stringio"

require_relative "../attachments/attachment"

module LlmFailover
  module ActiveRecord
    # How a messages table keeps a user message's attachments, in the order tried:
    # ActiveStorage when the message model has `has_many_attached :attachments` (the
    # app's storage service holds the bytes), else an `attachments_data` text column
    # (the canonical form as JSON, the bytes base64: SQLite and PostgreSQL text, MySQL
    # needs LONGTEXT). A table with neither refuses attachments with an ArgumentError
    # before anything is written.
    # @api private: used by MessageStore
    class StoredAttachments
      COLUMN = "attachments_data"

      def initialize(klass)
        @klass = klass
      end

      # The row's extra attributes for +attachments+, and what to do once it exists.
      # @return [Array(Hash, Proc)]
      # @raise [ArgumentError] the table can keep none
      def prepare(attachments)
        return [{}, nil] if attachments.empty?
        return [{}, ->(row) { attach(row, attachments) }] if active_storage?
        return [{ COLUMN => JSON.generate(attachments.map { |a| dump(a) }) }, nil] if column?

        raise ArgumentError, "#{@klass.table_name} cannot keep attachments: add a text column #{COLUMN} " \
                             "(or has_many_attached :attachments with ActiveStorage) to #{@klass.name}"
      end

      # @return [Array<Attachment>] the row's attachments in canonical form
      def read(row)
        if active_storage?
          row.attachments.map { |a| Attachment.from(a) }
        elsif column? && row[COLUMN].present?
          JSON.parse(row[COLUMN]).map { |h| load(h) }
        else
          []
        end
      end

      private

      def active_storage?
        @klass.respond_to?(:reflect_on_attachment) && !@klass.reflect_on_attachment(:attachments).nil?
      end

      def column?
        @klass.column_names.include?(COLUMN)
      end

      # A file read from an ActiveStorage blob is attached as that blob: the bytes are
      # in the service already and are not uploaded again.
      def attach(row, attachments)
        attachments.each do |a|
          if defined?(::ActiveStorage::Blob) && a.blob.is_a?(::ActiveStorage::Blob)
            row.attachments.attach(a.blob)
          else
            row.attachments.attach(io: StringIO.new(a.data.to_s), filename: a.filename || "attachment",
                                   content_type: a.mime_type)
          end
        end
      end

      def dump(attachment)
        { "mime_type" => attachment.mime_type, "filename" => attachment.filename, "url" => attachment.url,
          "digest" => attachment.digest, "data" => attachment.base64 }
      end

      # The column's base64 is kept as the attachment's own: decoded once, not encoded again.
      def load(hash)
        fields = { mime_type: hash["mime_type"], url: hash["url"], filename: hash["filename"] }
        return Attachment.new(**fields) if hash["data"].nil?

        Attachment.from_base64(hash["data"], **fields)
      end
    end
  end
end
